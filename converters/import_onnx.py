"""ONNX -> ``edge_sdk.model.Model`` (float32, TFLite builtin ops), without TensorFlow.

    model = import_onnx("net.onnx")            # a path, bytes, or an onnx.ModelProto
    write_model(model, "net_float.tflite")

What comes out:

- Every tensor keeps ONNX's layout (NCHW stays NCHW), so the model is a drop-in for the ONNX one. Each
  layout-sensitive op (Conv, ConvTranspose, MaxPool, AveragePool, Resize) becomes
  ``TRANSPOSE(NCHW->NHWC) -> the TFLite NHWC op -> TRANSPOSE(NHWC->NCHW)`` (for 1-D ops also a RESHAPE to
  and from H=1 inside the sandwich). The layout pass later pushes these through layout-agnostic ops and
  cancels pairs. Normalizations and global pools are expressed with axis-parameterised reductions on the
  NCHW tensor directly (no transposes).
- Ops TFLite lacks are emitted as decompositions: Erf as an odd rational function (max error 5e-7), Gelu,
  HardSigmoid, Elu, LayerNormalization, InstanceNormalization, BatchNormalization (MUL + ADD; the passes
  fold it into the producer), Pow with a constant exponent (MUL / SQRT / RSQRT / DIV where exact); Mish,
  Softsign, Celu, Selu, ThresholdedRelu, Shrink, the trigonometric / hyperbolic functions, Mod (fmod),
  ReduceL1 / L2 / LogSum / LogSumExp, Hardmax (ARG_MAX + ONE_HOT), Lp / MeanVariance / GroupNormalization,
  Trilu (a constant mask), ScatterND / ScatterElements (SCATTER_ND + SELECT_V2), DepthToSpace CRD (a channel
  GATHER before DEPTH_TO_SPACE), DFT / STFT (one FULLY_CONNECTED of constant cos / sin weights, any length),
  Resize modes TFLite's RESIZE ops lack (a per-axis interpolation matrix: GATHER or FULLY_CONNECTED), grouped /
  dilated ConvTranspose; a bidirectional / reverse LSTM / GRU / RNN becomes forward ones on the ONNX graph.
  ``FOLDED_OPS`` / ``REFUSED_OPS`` / ``PARTIAL_OPS`` below say what else is evaluated at convert time only,
  refused (and why: the refusal says it) or refused in some forms (tests/test_import_onnx_ops_inventory.py
  prints the whole table).
- Constants: initializers, Constant, and every node whose inputs are all constants (Shape of a static
  tensor, ConstantOfShape, the Shape->Gather->Concat->Reshape chains exporters emit, ...) are folded at
  import with onnx's reference evaluator, so shape parameters reach TFLite as constant tensors.
- Shapes: inputs with a dynamic dimension get 1 there (recorded as -1 in ``shape_signature``); an input whose
  shape ``input_shapes`` gives is static at that shape (the graph folds at it);
  ``onnx.shape_inference`` (with data propagation) runs after folding, and any tensor it leaves without a
  static shape is measured by running the graph once on the reference evaluator.
- Every node that cannot be mapped is collected (node name, op type, opset, reason) and reported at once as
  ``edge_sdk.ConversionError``; nothing is produced then. The result is finally prepared by edge-sdk's own
  interpreter, so a model this function returns is one our interpreter runs.

Sequence state: ONNX LSTM starts every run from its initial state. An LSTM with no state in or out (no
initial_h / initial_c, or zeros; Y_c unused) becomes TFLite's UNIDIRECTIONAL_SEQUENCE_LSTM, which keeps its
state in variable tensors across invokes: call ``reset_all_variables()`` between sequences. A streaming LSTM
-- initial_h / initial_c computed at run time (graph inputs), or Y_c read -- is unrolled over its (short)
sequence into FULLY_CONNECTED / ADD / SPLIT / LOGISTIC / TANH / MUL, so h and c are ordinary tensors: the
state inputs stay model inputs and Y_h / Y_c model outputs, and the caller carries them from chunk to chunk
(GRU and RNN are always unrolled so). ``model.import_notes["state"]`` lists which inputs / outputs hold state,
and ``model.import_notes["state_pairs"]`` the input / output pairs that carry one state from invoke to invoke (an
input a recurrent node reads its initial state from and an output its final state reaches, of the same static
shape and type): ``convert(stateful=True)`` (``converters.stateful``) turns each pair into a resource variable.

Control flow and pinned inputs: ``input_values`` turns graph inputs into constants (a sample rate, a mode
flag); an ``If`` whose condition folds (from constants, shapes or pinned inputs) is replaced by the taken
branch, a ``Loop`` whose iteration count is known at convert time (a constant trip count; a condition that
stays true or depends only on the iteration number / constant counters) and a ``Scan`` are unrolled
(``converters.onnx_control``). Otherwise the control flow stays for run time: an If on a run-time condition
becomes TFLite IF (then / else subgraphs whose inputs are the outer run-time values the branches read, passed as
IF's inputs after the condition), a Loop with a run-time trip count or condition becomes TFLite WHILE (loop
variables [iteration, trip count, condition, carried values, outer values the body reads]; a cond and a body
subgraph; the iteration number and the trip count are INT32, as TFLM has no INT64 ADD / LESS / CAST: a run-time
int64 M is clamped to [0, 2^31 - 1] and cast, the body reads the counter as int64 through one CAST, or directly
when only Casts read it); a note names the input to pin (``--input-value``) to keep one branch / unroll instead. A
run-time Loop's scan outputs need a trip count M known at convert time (a constant, or from pinned inputs): each is
then a WHILE loop variable of M rows (zeros from a FILL) the body writes at its iteration number with
DYNAMIC_UPDATE_SLICE, as TFLite's converter lowers a TensorList; when the condition may end the loop early the rows
after the last iteration run stay zero (said in the note), and such a padded buffer must be a model output. A Loop
with scan outputs and a run-time length, or an endless one, is refused (naming the inputs to pin and the unroll
limit). Streaming state inside an If branch / Loop body (silero v5 keeps its LSTM in the sample-rate
branches) is traced through the control node's inputs and outputs like state in the main graph. Until edge-sdk's interpreter has IF / WHILE kernels
such a model is not prepared by it at import (a note says so); LiteRT runs it.

Quantized ONNX and onnxruntime's fused ops (``converters.onnx_quantized``): a QDQ graph imports as its float
graph, a dynamic-int8 graph (MatMulInteger / ConvInteger / DynamicQuantizeLSTM / QAttention) as float ops over
its dequantized weights, and com.microsoft SkipLayerNormalization / FastGelu / BiasGelu / Gelu / QuickGelu /
FusedMatMul / BiasAdd / Attention as their decompositions. What the source's quantization said is kept:

- ``model.import_notes["quantized_source"]``: ``format`` ("qdq", "dynamic-int8", both, or float with fused ops
  only), ``rewritten`` (op -> count), ``given_ranges`` (float tensor name -> the QDQ pair's scale, zero_point,
  dtype, min, max) and ``weights`` (ONNX weight -> its int8 scale / zero point, summarised).
- The float tensor each QDQ pair stood on carries the range as ``Tensor.quantization`` with an EMPTY scale /
  zero_point and ``min`` / ``max`` = ``scale * (qmin - zp)``, ``scale * (qmax - zp)`` (TFLite's idiom for a
  fake-quant range on a float tensor: every reader keeps treating it as float; the optimize passes carry it
  to the tensors they derive). THE QUANTIZER'S SIDE: a FLOAT32 tensor whose quantization has no scale and a
  min / max is an activation with a given range -- use ``[min, max]`` as its calibrated range instead of the
  observed one (int8: ``scale = (max - min) / 255``, ``zero_point = -128 - round(min / scale)`` gives the source's
  own parameters again; a uint8 source's zero point minus 128), calibrating only the tensors without one; and
  clear these ranges from the tensors it leaves float. Weights need nothing: the source's symmetric int8
  scales are ``max|w| / 127`` per channel of the dequantized weights, which per-channel max-abs reproduces.
  Note that ``edge_sdk.model.reader`` drops a scale-less quantization, so the ranges reach the quantizer only
  in the in-memory ``Model`` (``convert()`` hands it ``read_model(write_model(float_model))`` today).
- ``model.given_quantization``: ONNX value name -> the full record (scale / zero_point arrays, axis, dtype,
  kind "activation" | "weight", min, max).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from edge_sdk.errors import ConversionError, ModelError, SettingError
from edge_sdk.model.builder import GraphBuilder
from edge_sdk.model.types import Model, Quantization
from edge_sdk.runtime import op_table

# ONNX TensorProto element type -> TFLite type name (every float width becomes FLOAT32).
_ONNX_TYPES = {1: "FLOAT32", 2: "UINT8", 3: "INT8", 5: "INT16", 6: "INT32", 7: "INT64", 9: "BOOL", 10: "FLOAT32",
               11: "FLOAT32", 16: "FLOAT32", 4: "UINT16", 12: "UINT32"}
_FLOAT_ONNX = {1, 10, 11, 16}
# TFLite type -> numpy dtype of the constants the handlers make for it
_NP_OF = {"FLOAT32": np.float32, "INT32": np.int32, "INT64": np.int64, "INT8": np.int8, "UINT8": np.uint8,
          "INT16": np.int16, "BOOL": np.bool_}
_LOWEST = float(np.finfo(np.float32).min)
# ops whose output size depends on the data; their handlers emit a fixed-size output (and a note) or refuse
_PADDED_OUTPUT_OPS = {"NonMaxSuppression"}
_MAX_UNROLLED_STEPS = 1024  # an LSTM with state in / out is unrolled: at most this many steps per invoke
_NONDETERMINISTIC = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial",
                     "Bernoulli"}
# Erf(x) ~= x * P(x^2) / Q(x^2) on [-4, 4] (clamped outside): the rational form Eigen and XLA use for float.
_ERF_P = (-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06, -5.69250639462346e-05,
          -7.34990630326855e-04, -2.95459980854025e-03, -1.60960333262415e-02)
_ERF_Q = (-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03, -7.37332916720468e-03,
          -1.42647390514189e-02)


# the caller's argument a message names: the flag and the convert() keyword
SHAPE_FLAG = "--input-shape (input_shapes=)"
PIN_FLAG = "--input-value (input_values=)"


class _Unsupported(Exception):
    """One node cannot be mapped; the message is the reason."""


def import_onnx(source, input_shapes=None, input_values=None, open_dims=False) -> Model:
    """An ONNX model (path, bytes or ``onnx.ModelProto``) as a float32 TFLite-semantics ``Model``.

    ``input_shapes``: ``{input name: shape}`` (or one shape for a one-input model) for inputs with dynamic
    (symbolic) dims. A dynamic dim without a given shape is an error naming the input and its dims, raised
    before anything else is done -- except a dynamic batch dim (axis 0), which becomes 1 with a warning (and a
    note in ``model.import_warnings``).

    ``input_values``: ``{input name: value}`` pins graph inputs to constants (a number, a list / array, or the
    text of one as the CLI gives it: ``"16000"``, ``"1,2,3"``, ``"true"``); the value takes the input's declared
    element type, and its shape is the declared one (a scalar or a flat list of the right size fills it) or the
    given array's. A pinned input leaves the model's signature, and everything computed from it folds -- an
    ``If`` on a sample-rate input keeps one branch. Recorded in ``model.import_notes["pinned_inputs"]`` and
    ``model.import_warnings``.

    What else the import resolved is in ``model.import_notes``: ``"control_flow"`` (If inlined, Loop / Scan
    unrolled, or kept as IF / WHILE: those notes in ``"control_flow_kept"`` too) and ``"state"`` (recurrent nodes
    whose state comes from / goes to graph inputs / outputs).

    ``open_dims=True`` (convert() sets it, then checks the result resizes: converters.dynamic_dims): a dynamic
    dim beyond the batch axis without a given shape is stored as 1 instead of being an error, and every dynamic
    input dim, given a shape or not, is listed in ``model.import_notes["open_dims"]`` ({input: {"dims": {axis: dim
    name}, "shape": the stored shape}}).

    Raises ``edge_sdk.ConversionError`` listing every node that cannot be converted, and ``ModelError`` for a
    file that is not a valid ONNX model.
    """
    proto = _load(source)
    return _Importer(proto, input_shapes, input_values, open_dims).run()


def _load(source):
    import onnx

    if isinstance(source, onnx.ModelProto):
        proto = onnx.ModelProto()
        proto.CopyFrom(source)
        return proto
    try:
        if isinstance(source, (bytes, bytearray, memoryview)):
            return onnx.load_from_string(bytes(source))
        return onnx.load(str(source))
    except (OSError, ValueError) as exc:
        raise ModelError(f"cannot read ONNX model {source if not isinstance(source, bytes) else '<bytes>'}: {exc}") \
            from None
    except Exception as exc:  # noqa: BLE001 -- protobuf's DecodeError is not a ValueError
        raise ModelError(f"not an ONNX model: {exc}") from None


def _attrs(node) -> dict:
    from onnx import helper

    out = {}
    for a in node.attribute:
        v = helper.get_attribute_value(a)
        if isinstance(v, bytes):
            v = v.decode()
        elif isinstance(v, list) and v and isinstance(v[0], bytes):
            v = [s.decode() for s in v]
        out[a.name] = v
    return out


def _broadcasts(small, shape) -> bool:
    """``small`` broadcasts to ``shape`` (numpy rules) without changing it."""
    try:
        return np.broadcast_shapes(tuple(shape), tuple(small)) == tuple(shape)
    except ValueError:
        return False


def _static(shape) -> bool:
    return shape is not None and all(isinstance(d, int) and d >= 0 for d in shape)


def _perm_to_last(rank: int) -> list[int]:  # NCHW -> NHWC
    return [0] + list(range(2, rank)) + [1]


def _perm_to_first(rank: int) -> list[int]:  # NHWC -> NCHW
    return [0, rank - 1] + list(range(1, rank - 1))


def _same_pads(size: int, k: int, stride: int, dilation: int) -> tuple[int, int]:
    """TFLite SAME padding (before, after) for one spatial dimension (the extra one goes after)."""
    eff = (k - 1) * dilation + 1
    out = -(-size // stride)
    total = max((out - 1) * stride + eff - size, 0)
    return total // 2, total - total // 2


@dataclass
class _Spatial:
    """Geometry of a conv / pool over 2 spatial dims (1-D ops get H = 1)."""

    size: tuple[int, int]
    kernel: tuple[int, int]
    strides: tuple[int, int]
    dilations: tuple[int, int]
    pads: tuple[tuple[int, int], tuple[int, int]]  # ((top, bottom), (left, right))


def _dim_text(d) -> str:
    if d.HasField("dim_value") and d.dim_value > 0:
        return str(d.dim_value)
    return d.dim_param if d.HasField("dim_param") and d.dim_param else "?"


def _shape_flag(name: str, dims: list[str]) -> str:
    example = ",".join(d if d.isdigit() else "N" if i == 0 else "D" for i, d in enumerate(dims))
    return f"--input-shape {name}:{example} (input_shapes={{'{name}': (...)}} in convert())"


# The importer's coverage of the ONNX default domain (opsets 11-20) besides its handlers (_op_<OpType> methods
# and _ONE_TO_ONE). tests/test_import_onnx_ops_inventory.py prints the table and fails on an op in none of these.
# Ops evaluated at convert time only (onnx's reference evaluator): mapped when their inputs fold to constants.
FOLDED_OPS = {
    "Constant": "a constant", "ConstantOfShape": "its shape input must fold (static shapes: --input-shape)",
    "Range": "start / limit / delta must fold (a run-time length is a run-time shape)",
    "Size": "its input's shape must be static", "EyeLike": "its input's shape must be static (2-D)",
    "HannWindow": "the size must be a constant", "HammingWindow": "the size must be a constant",
    "BlackmanWindow": "the size must be a constant",
    "MelWeightMatrix": "its five inputs must be constants (they are, in audio front ends)",
}
# Ops converters.onnx_control resolves (inlined / unrolled) or emits as TFLite IF / WHILE.
CONTROL_OPS = ("If", "Loop", "Scan")
# Ops rewritten on the ONNX graph into ops with handlers, in the forms said (any other form is refused so).
_STATIC_SEQUENCES = ("a sequence is mapped when its length and positions are known at convert time (it becomes "
                     "tensors); ONNX sequences have no TFLite form otherwise")
REWRITTEN_OPS = {
    **{op: "converters.onnx_quantized maps onnxruntime's quantize_dynamic form only (DynamicQuantizeLinear -> "
           "MatMulInteger / ConvInteger -> Cast -> Mul)" for op in ("DynamicQuantizeLinear", "MatMulInteger",
                                                                   "ConvInteger")},
    **{op: _STATIC_SEQUENCES for op in ("SequenceConstruct", "SequenceEmpty", "SequenceInsert", "SequenceErase",
                                        "SplitToSequence", "SequenceAt", "SequenceLength", "ConcatFromSequence")},
}
# Ops refused, and why (the refusal says it).
_NO_SEQUENCES = "ONNX sequence maps / optional values have no TFLite equivalent (static tensors only)"
_DATA_SIZED = "its output's size depends on the data; TFLite shapes are static"
REFUSED_OPS = {
    **{op: _NO_SEQUENCES for op in ("SequenceMap", "Optional", "OptionalGetElement", "OptionalHasElement")},
    **{op: "string tensors: TFLite builtins have no string ops" for op in (
        "RegexFullMatch", "StringConcat", "StringNormalizer", "StringSplit", "TfIdfVectorizer")},
    **{op: "random sampling: a converted model must be deterministic" for op in (
        "Bernoulli", "Multinomial", "RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike")},
    **{op: "a training loss, not an inference op" for op in ("NegativeLogLikelihoodLoss",
                                                             "SoftmaxCrossEntropyLoss")},
    "NonZero": _DATA_SIZED, "Unique": _DATA_SIZED,
    "ImageDecoder": "decodes encoded image bytes: preprocessing, outside the model",
    "QLinearConv": "QOperator format (converters.onnx_quantized refuses it naming the QDQ export)",
    "QLinearMatMul": "QOperator format (converters.onnx_quantized refuses it naming the QDQ export)",
    **{op: "unsigned-integer bit operations: TFLite builtins have only BITWISE_XOR / RIGHT_SHIFT on signed "
           "integers (no exporter emits them in the networks this SDK targets)"
       for op in ("BitShift", "BitwiseAnd", "BitwiseNot", "BitwiseOr", "BitwiseXor")},
    "Det": "no TFLite builtin computes a determinant",
    "GridSample": "no TFLite builtin samples at run-time coordinates (bilinear gather)",
    "AffineGrid": "feeds GridSample, which has no TFLite builtin",
    "DeformConv": "deformable convolution samples at run-time offsets: no TFLite builtin",
    "RoiAlign": "region pooling at run-time boxes: no TFLite builtin",
    "MaxRoiPool": "region pooling at run-time boxes: no TFLite builtin",
    "MaxUnpool": "scatters to run-time indices of a MaxPool: no TFLite builtin",
    "Col2Im": "no TFLite builtin (sliding-block folding)",
}
# Mapped ops with forms still refused (each refusal names its form).
PARTIAL_OPS = {
    "ArgMax": "inputs other than float / int8 / uint8 / int16 / int32",
    "ArgMin": "inputs other than float / int8 / uint8 / int16 / int32",
    "BatchNormalization": "training_mode=1 and its running-statistics outputs",
    "CenterCropPad": "a run-time shape",
    "Clip": "non-float inputs",
    "Compress": "a run-time condition (data-sized output)",
    "Conv": "4-D spatial convolutions; run-time weights",
    "ConvTranspose": "3-D; run-time weights; output_padding of a stride or more",
    "CumSum": "a run-time axis; types other than float / int32 / int64",
    "DepthToSpace": "other than 4-D",
    "DFT": "a run-time dft_length / axis",
    "Dropout": "the mask output",
    "Einsum": "3+ operands, diagonals (a repeated index in one operand), broadcasting a size-1 dim",
    "LpPool": "p other than 1 and 2",
    "GlobalLpPool": "p other than 1 and 2",
    "GroupNormalization": "run-time scale / bias",
    "GRU": "run-time weights of a bidirectional / reverse one, clip, non-default activations",
    "RNN": "run-time weights of a bidirectional / reverse one, clip, non-default activations",
    "LSTM": "run-time weights of a bidirectional / reverse one, clip, non-default activations, input_forget",
    "LayerNormalization": "the Mean / InvStdDev outputs",
    "LpNormalization": "p other than 1 and 2",
    "MaxPool": "the Indices output with storage_order",
    "Mod": "types other than float / int32 / int64",
    "NonMaxSuppression": "more than one batch or class; a result other nodes read (padded to a fixed row count)",
    "OneHot": "a run-time depth or values",
    "Pad": "negative pads (cropping), run-time pads",
    "Shape": "of a tensor whose shape is not static (folded otherwise)",
    "ReverseSequence": "run-time sequence_lens",
    "Resize": "tf_crop_and_resize, keep_aspect_ratio_policy other than stretch, interpolating non-float tensors",
    "Upsample": "modes TFLite's RESIZE ops do not compute",
    "ScatterElements": "reductions; repeated indices; negative run-time indices",
    "ScatterND": "reductions; repeated constant indices",
    "Slice": "run-time starts / ends / axes / steps",
    "STFT": "run-time frame_step / window / frame_length; onesided on a complex signal",
    "TopK": "a run-time K",
    "Tile": "run-time repeats",
    "Trilu": "a run-time k",
}

# ONNX ops that map one to one onto a TFLite op through a shared builder: op_type -> (builder method, TFLite op);
# the builder is called as builder(node, attrs, op). An op with more to do has its own _op_<OpType> method.
_ONE_TO_ONE = {
    "Add": ("_binary_node", "ADD"),
    "Sub": ("_binary_node", "SUB"),
    "Mul": ("_binary_node", "MUL"),
    "Div": ("_binary_node", "DIV"),
    "Min": ("_variadic", "MINIMUM"),
    "Max": ("_variadic", "MAXIMUM"),
    "Sqrt": ("_unary_node", "SQRT"),
    "Exp": ("_unary_node", "EXP"),
    "Log": ("_unary_node", "LOG"),
    "Relu": ("_unary_node", "RELU"),
    "Sigmoid": ("_unary_node", "LOGISTIC"),
    "Tanh": ("_unary_node", "TANH"),
    "HardSwish": ("_unary_node", "HARD_SWISH"),
    "Ceil": ("_unary_node", "CEIL"),
    "Floor": ("_unary_node", "FLOOR"),
    "Round": ("_unary_node", "ROUND"),  # both round half to even
    "Sin": ("_unary_node", "SIN"),
    "Cos": ("_unary_node", "COS"),
    "Sign": ("_unary_node", "SIGN"),
    "Sum": ("_variadic", "ADD"),
    "Softmax": ("_softmax", "SOFTMAX"),
    "LogSoftmax": ("_softmax", "LOG_SOFTMAX"),
    "ReduceMean": ("_reduce", "MEAN"),
    "ReduceSum": ("_reduce", "SUM"),
    "ReduceMax": ("_reduce", "REDUCE_MAX"),
    "RNN": ("_recurrent", "RNN"),
    "GRU": ("_recurrent", "GRU"),
    "Less": ("_compare_node", "LESS"),
    "LessOrEqual": ("_compare_node", "LESS_EQUAL"),
    "Greater": ("_compare_node", "GREATER"),
    "GreaterOrEqual": ("_compare_node", "GREATER_EQUAL"),
    "Equal": ("_compare_node", "EQUAL"),
    "And": ("_logical_node", "LOGICAL_AND"),
    "Or": ("_logical_node", "LOGICAL_OR"),
    "Xor": ("_logical_node", "NOT_EQUAL"),
    "Not": ("_logical_node", "LOGICAL_NOT"),
}


class _Importer:
    def __init__(self, proto, input_shapes=None, input_values=None, open_dims=False):
        import onnx

        self.input_shapes = input_shapes
        self.input_values = input_values
        self.store_open_dims = open_dims  # dynamic dims beyond the batch axis stored as 1, not refused
        self.open_dims: dict[str, dict[int, str]] = {}  # input -> {axis: its dim_param, or "?"}: every dynamic dim
        self.notes: list[str] = []
        self.import_notes: dict = {}
        self.pinned: dict[str, np.ndarray] = {}
        self.control_notes: list[str] = []
        self.control_kept: list[str] = []  # the notes of If / Loop kept as TFLite IF / WHILE (not folded)
        self.state_nodes: list[dict] = []
        self.onnx = onnx
        self.proto = proto
        self.opset = next((o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")), 1)
        self.g = GraphBuilder()
        self.names: set[str] = set()
        self.consts: dict[str, np.ndarray] = {}
        self.shapes: dict[str, tuple] = {}
        self.types: dict[str, int] = {}
        self.values: dict[str, int] = {}  # ONNX name -> TFLite tensor index
        self.dynamic: dict[str, list[bool]] = {}  # ONNX graph input/output name -> which dims were dynamic
        self.problems: list[str] = []
        self.used: set[str] = set()
        self.quantized = None  # converters.onnx_quantized.Rewritten for a quantized / onnxruntime-fused graph
        self._namer = None  # fresh ONNX names for control flow resolved inside IF / WHILE subgraphs

    # ------------------------------------------------------------------ driver
    def run(self) -> Model:
        graph = self.proto.graph
        self._pin_inputs()
        self._rewrite_quantized()
        _split_recurrent_directions(self.proto.graph)
        self._fix_inputs()
        _resolve_static_sequences(self.proto, self.opset)
        self._fold_and_infer()
        self.used = _referenced(graph)
        for name in self._graph_inputs():
            shape = self.shapes[name]
            if self.types[name] and self.types[name] not in _ONNX_TYPES:  # 0: no type given (taken as float)
                from onnx import TensorProto

                raise ConversionError(f"input '{name}' is an ONNX {TensorProto.DataType.Name(self.types[name])} "
                                      "tensor: the converted model has no input of that type")
            t = self._new(name, shape, _ONNX_TYPES.get(self.types[name], "FLOAT32"))
            self.g.inputs.append(t)
            self.values[name] = t
            if any(self.dynamic.get(name, [])):
                self.g.tensors[t].shape_signature = tuple(-1 if d else s for d, s in zip(self.dynamic[name], shape))
        for index, node in enumerate(graph.node):
            self._emit_node(node, node.name or f"{node.op_type}_{index}")
        if self.problems:
            raise ConversionError(f"{len(self.problems)} ONNX node(s) cannot be converted", self.problems)
        self._outputs()
        self._float64_note()
        model = self.g.build(description="edge-sdk import_onnx")
        self._verify(model)
        if self.state_nodes:
            self.import_notes["state"] = self._state_report()
            self.import_notes["state_pairs"] = self._state_pairs(self.import_notes["state"])
        model.import_warnings = list(self.notes)
        if self.pinned:
            self.import_notes["pinned_inputs"] = {k: _pinned_summary(v) for k, v in self.pinned.items()}
        if self.control_notes:
            self.import_notes["control_flow"] = list(self.control_notes)
        if self.control_kept:
            self.import_notes["control_flow_kept"] = list(self.control_kept)
        if self.quantized is not None and (self.quantized.source or self.quantized.rewritten):
            self.import_notes["quantized_source"] = self._given_quantization(model)
            model.given_quantization = dict(self.quantized.given)  # full arrays by ONNX value name
        if self.store_open_dims and self.open_dims:
            self.import_notes["open_dims"] = {k: {"dims": dict(v), "shape": [int(d) for d in self.shapes[k]]}
                                              for k, v in self.open_dims.items() if k in self.shapes}
        model.import_notes = dict(self.import_notes)
        return model

    def _emit_node(self, node, name: str):
        """The TFLite ops of one ONNX node, into the subgraph being built (``self.g``); a node that cannot be
        mapped is recorded in ``self.problems`` (the main graph's and the IF / WHILE subgraphs' alike)."""
        refused = self.quantized.refused.get(node.output[0]) if self.quantized and node.output else None
        if refused:
            self._problem(name, node, refused)
            return
        if node.domain not in ("", "ai.onnx"):
            self._problem(name, node, self._custom_domain_reason(node))
            return
        if any(i and i not in self.values and i not in self.consts for i in node.input):
            return  # an input comes from a node that already failed: that node is the reported problem
        try:
            control = node.op_type in ("If", "Loop", "Scan")
            handler = self._handler(node.op_type) if not control else self._runtime_control(node)
            if handler is None:
                raise _Unsupported(self._control_blocker(node) if control else self._no_handler(node))
            for k, o in enumerate(node.output):
                if node.op_type in _PADDED_OUTPUT_OPS:
                    break  # the handler gives the data-dependent output a fixed size (and says so)
                if node.op_type == "Loop" and k >= len(node.input) - 2:
                    break  # scan outputs: the WHILE's buffers of trip-count rows (_emit_while sizes them)
                if o and o in self.used and not _static(self.shapes.get(o)):
                    raise _Unsupported(f"output '{o}' has no static shape (it depends on the data, or on an "
                                       "input dim: give the inputs' shapes with --input-shape NAME:D0,D1,...)")
            self.node_name = name
            handler(node, _attrs(node))
        except _Unsupported as exc:
            self._problem(name, node, str(exc))

    # ------------------------------------------------------------------ run-time control flow: IF / WHILE
    # An If whose condition is known only at run time becomes TFLite IF: its branches become subgraphs whose
    # inputs are the outer run-time values they read (passed as IF's inputs after the condition; constants they
    # read are copied into them). A Loop with a run-time trip count or condition becomes WHILE over the loop
    # variables [iteration (int64 ()), trip count M if run-time, condition, carried values..., outer values the
    # body reads...]: the cond subgraph computes ``iteration < M and condition``, the body subgraph runs the ONNX
    # body and gives [iteration + 1, M, its condition, its carried values, the outer values unchanged].
    def _runtime_control(self, node):
        """The handler emitting IF / WHILE for this control node, or None when that does not apply (a
        condition known at convert time that could not be inlined, a Scan, an endless loop): the node's blocker
        is the problem then. Raises _Unsupported when the run-time form applies but cannot be built."""
        if node.op_type == "If" and node.input[0] not in self.consts:
            return self._emit_if
        if node.op_type == "Loop":
            from converters import onnx_control

            reason = onnx_control.loop_blocker(node, self.consts, self.opset)
            if reason is None or reason == onnx_control.ENDLESS:
                return None  # unrollable (its scan outputs are empty: the blocker says so) or endless
            reason = self._control_blocker(node)
            n_scan = len(_attrs(node)["body"].output) - 1 - (len(node.input) - 2)
            rows, exact = self._scan_rows(node)
            if n_scan and rows is None:  # ONNX stacks one slice per iteration run: a run-time count is a run-time shape
                deps = sorted({d for v in node.input[:2] if v and v not in self.consts
                               for d in self._input_ancestors(v)})
                pin = (" ".join(f"--input-value {d}=VALUE" for d in deps) if deps else "--input-value")
                raise _Unsupported(f"{reason}; as a run-time WHILE its {n_scan} scan output(s) would have a "
                                   "run-time length (TFLite needs static shapes): it converts when its trip count "
                                   f"is known at convert time (pin the inputs it depends on: {pin}): unrolled at most "
                                   f"{onnx_control.MAX_UNROLL} iterations, else a WHILE writing a buffer of M rows")
            if n_scan and rows > onnx_control.MAX_SCAN_ROWS:
                raise _Unsupported(f"{reason}; its {n_scan} scan output(s) would be WHILE buffers of {rows} rows "
                                   f"(trip count M; at most {onnx_control.MAX_SCAN_ROWS})")
            outputs = {o.name for o in self.proto.graph.output}
            inner = [o for o in node.output[len(node.input) - 2:] if o and o not in outputs]
            if n_scan and not exact and inner:
                raise _Unsupported(f"{reason}; its scan output(s) {', '.join(repr(o) for o in inner)} would be "
                                   f"written into {rows} rows of which only the iterations run hold values (the "
                                   "condition may end the loop early): only a model output can be such a padded "
                                   "buffer, not a value other nodes read")
            return self._emit_while
        return None

    def _outer_values(self, graphs) -> list[str]:
        """The run-time outer values the subgraphs read (constants excluded: they are copied in), in order."""
        from converters import onnx_control

        names: list[str] = []
        for sub in graphs:
            for n in sorted(onnx_control.outer_refs(sub)):
                if n not in names and n not in self.consts:
                    if n not in self.values:
                        raise _Unsupported(f"the subgraph reads '{n}', which is not computed before this node")
                    names.append(n)
        return names

    def _subgraph_of(self, body, label: str, bind: list[tuple[str, int]], shapes=None):
        """A new TFLite subgraph computing ONNX graph ``body``: its inputs are tensors like the outer tensors
        ``bind`` pairs with the names the body reads them by, its outputs the body's outputs (each checked
        against ``shapes``: (shape, type) per output). Returns the builder, or None when a node of the body
        could not be converted (its problem is recorded)."""
        from onnx import numpy_helper

        outer_g, outer_values, outer_name = self.g, self.values, getattr(self, "node_name", "")
        sub = self.g.subgraph(label)
        self.g, self.values = sub, {}
        problems = len(self.problems)
        try:
            for name, outer in bind:
                src = outer_g.tensors[outer]
                t = sub.input(self._unique(f"{label}/{name}"), src.shape, src.type)
                self.values[name] = t
                self.shapes[name], self.types[name] = tuple(src.shape), _TFLITE_TO_ONNX.get(src.type, 1)
            for init in body.initializer:
                self.consts[init.name] = numpy_helper.to_array(init)
                self.shapes[init.name] = tuple(init.dims)
            self._emit_body(list(body.node), label)
            if len(self.problems) > problems:
                return None
            for k, out in enumerate(body.output):
                self.node_name = f"{label}/{out.name}"
                t = self.values[out.name] if out.name in self.values else self.value(out.name)
                if t in sub.inputs or t in sub.outputs or sub.tensors[t].buffer != 0:
                    src = t  # a subgraph output of its own (not an input, constant or another output): a copy
                    t = self._new(f"{label}/{out.name}", self.shape(src), self.ttype(src))
                    self.reshape(src, self.shape(src), "copy", out=t)
                if shapes is not None:
                    want, got = shapes[k], (tuple(self.shape(t)), self.ttype(t))
                    if (tuple(want[0]), want[1]) != got:
                        raise _Unsupported(f"{label}: output {k} ('{out.name}') is {got[1]} {list(got[0])}, the node's "
                                           f"is {want[1]} {list(want[0])} (TFLite needs the same static shape)")
                sub.output(t)
            return sub
        finally:
            self.g, self.values, self.node_name = outer_g, outer_values, outer_name

    def _emit_body(self, nodes: list, label: str):
        """The nodes of an If branch / Loop body, in order: those whose inputs are all constant fold here (the
        main graph's folded before), an If on a constant condition is inlined, a Loop / Scan of a known length
        unrolled, the others are emitted."""
        from converters import onnx_control

        todo = list(nodes)
        index = 0
        while todo:
            node = todo.pop(0)
            index += 1
            name = node.name or f"{label}/{node.op_type}_{index}"
            if node.op_type in ("If", "Loop", "Scan"):  # folded / unrolled when it can be, as in the main graph
                self._namer = self._namer or onnx_control.Namer(self.proto.graph)
                resolved = self._resolve_control(node, index, self._namer)
                if resolved is not None:
                    inlined, consts, note = resolved
                    for k, v in consts.items():
                        self.consts[k] = np.asarray(v)
                        self.shapes[k] = tuple(np.shape(v))
                    self.control_notes.append(note)
                    todo[:0] = inlined
                    continue
            value = self._try_fold(node)
            if value is not None:
                for k, v in zip(node.output, value):
                    if k:
                        self.consts[k] = np.asarray(v)
                        self.shapes[k] = tuple(np.shape(v))
                continue
            if any(o and not _static(self.shapes.get(o)) for o in node.output):
                self._infer_node(node)
            self._emit_node(node, name)

    def _infer_node(self, node):
        """Shapes of a subgraph node's outputs that whole-model inference left open (it does not propagate
        constants into If branches / Loop bodies): onnx's inference on this node alone, its inputs' static
        shapes and constant values given."""
        import onnx
        from onnx import helper, numpy_helper

        inputs, inits = [], []
        for i in dict.fromkeys(x for x in node.input if x):
            if i in self.consts:
                inits.append(numpy_helper.from_array(np.asarray(self.consts[i]), i))
            elif _static(self.shapes.get(i)) and i in self.types:
                inputs.append(helper.make_tensor_value_info(i, self.types[i], list(self.shapes[i])))
            else:
                return
        copy = type(node)()
        copy.CopyFrom(node)
        graph = helper.make_graph([copy], "one_node", inputs,
                                  [helper.make_empty_tensor_value_info(o) for o in node.output if o], inits)
        try:
            model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", self.opset)])
            inferred = onnx.shape_inference.infer_shapes(model, data_prop=True, strict_mode=False)
        except Exception:  # noqa: BLE001 -- left open: the node reports "no static shape"
            return
        for vi in list(inferred.graph.output) + list(inferred.graph.value_info):
            tt = vi.type.tensor_type
            if tt.HasField("shape"):
                dims = tuple(d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim)
                if _static(dims):
                    self.shapes[vi.name] = dims
                    if tt.elem_type:
                        self.types[vi.name] = tt.elem_type

    def _emit_if(self, node, a):
        """ONNX If on a run-time condition: TFLite IF with a then and an else subgraph."""
        name = self.node_name
        cond = self.value(node.input[0])
        if self.ttype(cond) != "BOOL" or int(np.prod(self.shape(cond))) != 1:
            raise _Unsupported(f"condition '{node.input[0]}' is {self.ttype(cond)} {list(self.shape(cond))} "
                               "(one bool expected)")
        branches = (a["then_branch"], a["else_branch"])
        captured = self._outer_values(branches)
        outer = [self.value(n) for n in captured]
        shapes = [(tuple(self.shapes[o]), _ONNX_TYPES.get(self.types.get(o, 1), "FLOAT32")) for o in node.output]
        subs = [self._subgraph_of(b, f"{name}/{which}", list(zip(captured, outer)), shapes)
                for b, which in zip(branches, ("then", "else"))]
        if None in subs:
            return  # a node inside a branch is the reported problem
        self.node_name = name
        outs = [self.out(node, k) for k in range(len(node.output))]
        self._op("IF", [cond, *outer], outs, then_subgraph_index=subs[0].index, else_subgraph_index=subs[1].index)
        deps = self._input_ancestors(node.input[0])
        pin = (f"; it depends on input {', '.join(repr(d) for d in deps)}: "
               f"{' '.join(f'--input-value {d}=VALUE' for d in deps)} keeps one branch") if deps else ""
        note = (f"If '{name}': condition '{node.input[0]}' is known only at run time: TFLite IF with subgraphs "
                f"{subs[0].index} (then, {len(branches[0].node)} nodes) and {subs[1].index} (else, "
                f"{len(branches[1].node)} nodes), reading {len(captured)} outer value(s){pin}")
        self.control_notes.append(note)
        self.control_kept.append(note)
        self.notes.append(note)

    def _scan_rows(self, node) -> tuple[int | None, bool]:
        """A run-time Loop's scan outputs as WHILE buffers: (rows, exact). rows: the trip count M when it is known
        at convert time (a constant, or from pinned inputs), else None; exact: every one of the M iterations runs
        (the condition is absent or a constant true the body passes through), so the buffer is the scan output
        itself; else the loop may stop early and the rows after the last iteration stay zero."""
        from converters import onnx_control

        inp = list(node.input) + [""] * (2 - len(node.input))
        if not inp[0] or inp[0] not in self.consts:
            return None, False
        rows = max(int(np.asarray(self.consts[inp[0]]).reshape(-1)[0]), 0)
        cond_fixed = not inp[1] or (inp[1] in self.consts and bool(np.asarray(self.consts[inp[1]]).reshape(-1)[0]))
        return rows, cond_fixed and onnx_control.passes_cond_through(_attrs(node)["body"])

    def _emit_while(self, node, a):
        """ONNX Loop with a run-time trip count / condition: TFLite WHILE (cond and body subgraphs). Scan outputs
        (only with a trip count M known here: ``_scan_rows``) are loop variables of M rows, zeros at first, the body
        writing its iteration's row with DYNAMIC_UPDATE_SLICE at the iteration number (the TFLite converter's
        TensorList form)."""
        from converters import onnx_control

        name = self.node_name
        body = a["body"]
        inp = list(node.input) + [""] * (2 - len(node.input))
        carried = list(node.input[2:])
        n_scan = len(body.output) - 1 - len(carried)
        if len(body.input) != 2 + len(carried) or n_scan < 0:
            raise _Unsupported(f"the body has {len(body.input)} inputs / {len(body.output)} outputs for "
                               f"{len(carried)} loop-carried value(s)")
        # the counters are INT32 (TFLM has no INT64 ADD / LESS): the iteration number counts in int32, the trip
        # count M is clamped to [0, 2^31 - 1] (fewer iterations than 0 or more than 2^31 - 1 run alike) and cast
        start = self._constant_tensor(self._unique(f"{name}/iteration0"), np.array(0, np.int32), "INT32")
        loop_vars: list[tuple[str, int]] = [("iteration", start)]  # (role, outer tensor)
        trip = None
        if inp[0]:
            trip = self.value(inp[0])
            if self.ttype(trip) != "INT64" or int(np.prod(self.shape(trip))) != 1:
                raise _Unsupported(f"trip count '{inp[0]}' is {self.ttype(trip)} {list(self.shape(trip))} "
                                   "(one int64 expected)")
            trip = self._int32_trip_count(inp[0], trip, name)
            loop_vars.append(("trip_count", trip))
        if inp[1]:
            cond0 = self.value(inp[1])
            if self.ttype(cond0) != "BOOL" or int(np.prod(self.shape(cond0))) != 1:
                raise _Unsupported(f"condition '{inp[1]}' is {self.ttype(cond0)} {list(self.shape(cond0))} "
                                   "(one bool expected)")
        else:
            cond0 = self._constant_tensor(self._unique(f"{name}/condition0"), np.array(True), "BOOL")
        loop_vars.append(("condition", cond0))
        for k, v in enumerate(carried):
            loop_vars.append((f"carried{k}", self.value(v)))
        captured = self._outer_values([body])
        loop_vars += [(f"outer:{n}", self.value(n)) for n in captured]
        names = [r for r, _ in loop_vars]
        tensors = [t for _, t in loop_vars]

        # cond subgraph: iteration < M (when there is an M) and the condition
        cond_g = self.g.subgraph(f"{name}/cond")
        ins = [cond_g.input(self._unique(f"{name}/cond/{r}"), self.shape(t), self.ttype(t)) for r, t in loop_vars]
        c = ins[names.index("condition")]
        if trip is not None:
            i, m = ins[0], ins[names.index("trip_count")]
            less = cond_g.tensor(self._unique(f"{name}/cond/below_trip_count"),
                                 np.broadcast_shapes(self.shape(trip), ()), "BOOL")
            cond_g.op("LESS", [i, m], [less])
            both = cond_g.tensor(self._unique(f"{name}/cond/go_on"),
                                 np.broadcast_shapes(self.shape(trip), self.shape(cond0)), "BOOL")
            cond_g.op("LOGICAL_AND", [less, c], [both])
            c = both
        cond_g.output(c)

        # body subgraph: the ONNX body, then the next iteration number; M and the outer values unchanged. The body
        # reads the iteration number as ONNX's int64: a CAST of the int32 counter, only when it reads it at all
        counter = f"{name}/iteration_int32"  # a name the ONNX body cannot read (unique node name)
        body = self._counter_as_int64(body, counter)
        bind = [(counter, start), (body.input[1].name, cond0)]
        bind += [(body.input[2 + k].name, self.value(v)) for k, v in enumerate(carried)]
        bind += [(n, self.value(n)) for n in captured]
        if trip is not None:
            bind.insert(1, (f"{name}/trip_count", trip))  # a name the ONNX body cannot read (unique node name)
        shapes = [(tuple(self.shape(cond0)), "BOOL")] + [(tuple(self.shape(self.value(v))), self.ttype(self.value(v)))
                                                         for v in carried]
        body_g = self._subgraph_of(body, f"{name}/body", bind, None)
        if body_g is None:
            return
        self.node_name = f"{name}/body"
        outer_g, outer_values = self.g, self.values
        self.g = body_g
        try:
            b_in = body_g.inputs
            one = self._constant_tensor(self._unique(f"{name}/body/one"), np.array(1, np.int32), "INT32")
            nxt = body_g.tensor(self._unique(f"{name}/body/next_iteration"), (), "INT32")
            body_g.op("ADD", [b_in[0], one], [nxt], fused_activation_function="NONE")
            results = list(body_g.outputs)  # cond, carried... (as the ONNX body gives them)
            for k, (t, (want, type_)) in enumerate(zip(results, shapes)):
                got = (tuple(self.shape(t)), self.ttype(t))
                if got == (want, type_):
                    continue
                if k == 0 and got[1] == "BOOL" and int(np.prod(got[0])) == 1:  # a condition of shape [1] vs ()
                    results[0] = self.reshape(t, want, "condition", out=self.g.tensor(
                        self._unique(f"{name}/body/condition"), want, "BOOL"))
                    continue
                what = "the condition" if k == 0 else f"loop-carried '{carried[k - 1]}'"
                raise _Unsupported(f"the body changes the shape of {what} from {type_} {list(want)} to {got[1]} "
                                   f"{list(got[0])} (a WHILE loop needs static shapes)")
            unchanged = b_in[len(b_in) - len(captured):] if captured else []  # the outer values the body reads
            results, scans = results[:1 + len(carried)], results[1 + len(carried):]
            at = len(b_in) - len(captured)  # the buffers' place among the loop variables: after the carried values
            rows, exact = self._scan_rows(node) if n_scan else (0, True)
            written = [self._write_row(f"{name}/body/scan{k}", b_in[0], v, rows) for k, v in enumerate(scans)]
            b_in[at:at] = [buffer for buffer, _ in written]
            body_g.outputs[:] = ([nxt] + ([b_in[1]] if trip is not None else []) + results
                                 + [updated for _, updated in written] + unchanged)
        finally:
            self.g, self.values = outer_g, outer_values
        self.node_name = name
        for k, (buffer, _) in enumerate(written):  # zeros at first; the cond subgraph passes them by
            shape, type_ = tuple(body_g.tensors[buffer].shape), body_g.tensors[buffer].type
            loop_vars.insert(at + k, (f"scan{k}", self._zeros(f"{name}/scan{k}_rows", shape, type_)))
            cond_g.inputs.insert(at + k, cond_g.tensor(self._unique(f"{name}/cond/scan{k}_rows"), shape, type_))
        tensors = [t for _, t in loop_vars]
        outs = []  # WHILE gives every loop variable's final value; the node's outputs are the carried ones
        for r, t in loop_vars:
            k = int(r[len("carried"):]) if r.startswith("carried") else \
                len(carried) + int(r[len("scan"):]) if r.startswith("scan") else None
            if k is not None and k < len(node.output) and node.output[k]:
                if r.startswith("scan"):  # M rows of the body's row shape
                    self.shapes[node.output[k]] = tuple(self.shape(t))
                    self.dynamic.pop(node.output[k], None)
                outs.append(self.out(node, k, type=self.ttype(t) if r.startswith("scan") else None))
            else:
                outs.append(self._tmp(f"final_{r.replace(':', '_')}", self.shape(t), self.ttype(t)))
        self._op("WHILE", tensors, outs, cond_subgraph_index=cond_g.index, body_subgraph_index=body_g.index)
        deps = sorted({d for v in (inp[0], inp[1]) if v and v not in self.consts for d in self._input_ancestors(v)})
        rows, exact = self._scan_rows(node)
        why = ("trip count known only at run time" if inp[0] and inp[0] not in self.consts else
               f"trip count {rows} above the unroll limit {onnx_control.MAX_UNROLL}" if exact else
               "condition known only at run time")
        note = (f"Loop '{name}': {why}: TFLite WHILE with subgraphs {cond_g.index} (cond) and {body_g.index} (body, "
                f"{len(body.node)} nodes), {len(loop_vars)} loop variables"
                + (f"; it depends on input {', '.join(repr(d) for d in deps)}" if deps else ""))
        if n_scan:
            note += (f"; {n_scan} scan output(s) written row by row (DYNAMIC_UPDATE_SLICE) into buffers of {rows} rows "
                     "(the trip count)" + ("" if exact else ": the condition may end the loop early, the rows after "
                                           "the last iteration run stay zero"))
        self.control_notes.append(note)
        self.control_kept.append(note)
        self.notes.append(note)

    def _int32_trip_count(self, onnx_name: str, trip: int, name: str) -> int:
        """The WHILE's trip count as INT32: a constant converted here, a run-time one clamped to [0, 2^31 - 1]
        (MAXIMUM / MINIMUM in int64) and cast (a plain CAST would wrap 2^32 + 5 to 5)."""
        shape = tuple(self.shape(trip))
        if onnx_name in self.consts:
            m = int(np.asarray(self.consts[onnx_name]).reshape(-1)[0])
            value = np.array(min(max(m, 0), 2**31 - 1), np.int32).reshape(shape)
            return self._constant_tensor(self._unique(f"{name}/trip_count_int32"), value, "INT32")
        low = self._constant_tensor(self._unique(f"{name}/zero_int64"), np.array(0, np.int64), "INT64")
        high = self._constant_tensor(self._unique(f"{name}/int32_max"), np.array(2**31 - 1, np.int64), "INT64")
        above = self._tmp("trip_count_at_least_0", shape, "INT64")
        self._op("MAXIMUM", [trip, low], [above])
        below = self._tmp("trip_count_at_most_int32_max", shape, "INT64")
        self._op("MINIMUM", [above, high], [below])
        out = self._tmp("trip_count_int32", shape, "INT32")
        self._op("CAST", [below], [out], in_data_type="INT64", out_data_type="INT32")
        return out

    def _write_row(self, label: str, counter: int, value: int, rows: int) -> tuple[int, int]:
        """In the WHILE body being built (``self.g``): a buffer input of ``rows`` rows of ``value``'s shape and
        ``value`` written as its row ``counter`` (the int32 iteration number) by DYNAMIC_UPDATE_SLICE. Returns
        (the buffer input, not yet among the subgraph's inputs; the updated buffer)."""
        shape, type_ = tuple(self.shape(value)), self.ttype(value)
        buffer = self.g.tensor(self._unique(f"{label}_rows"), (rows,) + shape, type_)
        row = self.reshape(value, (1,) + shape, "row", out=self.g.tensor(self._unique(f"{label}_row"), (1,) + shape,
                                                                          type_))
        start = self.reshape(counter, (1,), "row_index", out=self.g.tensor(self._unique(f"{label}_index"), (1,),
                                                                             "INT32"))
        if shape:  # [iteration, 0, 0, ...]
            zeros = self._constant_tensor(self._unique(f"{label}_zeros"), np.zeros(len(shape), np.int32), "INT32")
            at = self.g.tensor(self._unique(f"{label}_start"), (1 + len(shape),), "INT32")
            self._op("CONCATENATION", [start, zeros], [at], axis=0, fused_activation_function="NONE")
            start = at
        updated = self.g.tensor(self._unique(f"{label}_written"), (rows,) + shape, type_)
        self._op("DYNAMIC_UPDATE_SLICE", [buffer, row, start], [updated])
        return buffer, updated

    def _zeros(self, name: str, shape: tuple, type_: str) -> int:
        """A run-time tensor of zeros (FILL: the model stores the shape, not the zeros)."""
        from edge_sdk.model.types import TENSOR_TYPES

        dims = self._constant_tensor(self._unique(f"{name}/shape"), np.asarray(shape, np.int32), "INT32")
        zero = self._constant_tensor(self._unique(f"{name}/zero"), np.zeros((), TENSOR_TYPES[type_][1]), type_)
        out = self.g.tensor(self._unique(name), shape, type_)
        self._op("FILL", [dims, zero], [out])
        return out

    @staticmethod
    def _counter_as_int64(body, counter: str):
        """The Loop body reading its iteration number from the int32 loop variable ``counter``: a copy whose
        first node casts it to the int64 name the body reads (the body itself when it does not read it)."""
        from onnx import TensorProto, helper

        from converters import onnx_control

        i_name = body.input[0].name
        reads = {o.name for o in body.output}.union(*(onnx_control.node_refs(n) for n in body.node))
        if i_name not in reads:  # nested subgraphs' reads included
            return body
        copy = type(body)()
        copy.CopyFrom(body)
        readers = [n for n in copy.node if i_name in onnx_control.node_refs(n)]
        if i_name not in {o.name for o in copy.output} and all(
                n.op_type == "Cast" and list(n.input) == [i_name] for n in readers):
            # only Casts read it (to float, say): they read the int32 counter itself, no int64 on the way
            # (TFLM's CAST takes no INT64 input); an iteration number fits int32 either way
            for n in readers:
                n.input[0] = counter
            return copy
        copy.node.insert(0, helper.make_node("Cast", [counter], [i_name], to=TensorProto.INT64,
                                             name=f"{counter}/as_int64"))
        return copy

    # ------------------------------------------------------------------ quantized ONNX (converters.onnx_quantized)
    def _rewrite_quantized(self):
        """QDQ pairs, dynamic-int8 MatMulInteger / ConvInteger and onnxruntime's com.microsoft fused ops become
        float ONNX ops before folding (``converters.onnx_quantized``); a graph with none of them is not touched."""
        from converters import onnx_quantized

        graph = self.proto.graph
        if not any(n.domain == onnx_quantized.MS or n.op_type in ("QuantizeLinear", "DequantizeLinear",
                                                                  "MatMulInteger", "ConvInteger", "QLinearConv",
                                                                  "QLinearMatMul")
                   for n in graph.node):
            return
        self.quantized = onnx_quantized.rewrite(self.proto, self.opset)

    def _qparams(self, node, what):
        """(scale, zero point) of a per-tensor QuantizeLinear / DequantizeLinear (constants)."""
        inp = list(node.input) + [""] * (3 - len(node.input))
        scale = np.asarray(self.need_const(inp[1], f"{what} scale"), np.float32).reshape(-1)
        zp = self.const(inp[2])
        if scale.size != 1 or (zp is not None and np.size(zp) != 1):
            raise _Unsupported(f"per-axis {what} on a run-time tensor (per-tensor only; per-axis weights are "
                               "constants and fold)")
        return scale, np.asarray(0 if zp is None else zp, np.int64).reshape(-1), \
            np.asarray(zp).dtype if zp is not None else np.dtype(np.uint8)

    def _op_QuantizeLinear(self, node, a):
        """A QuantizeLinear not paired with a DequantizeLinear: the model hands a real int8 tensor on."""
        x = self.float_input(node)
        scale, zp, dtype = self._qparams(node, "QuantizeLinear")
        type = {"int8": "INT8", "uint8": "UINT8", "int16": "INT16"}.get(dtype.name)
        if type is None:
            raise _Unsupported(f"quantizing to {dtype.name} (int8 / uint8 / int16 only)")
        out = self.out(node, type=type)
        self.g.tensors[out].quantization = Quantization(scale=scale, zero_point=zp)
        self._op("QUANTIZE", [x], [out])

    def _op_DequantizeLinear(self, node, a):
        """A DequantizeLinear of a run-time int8 tensor (a DequantizeLinear of a constant folds at import)."""
        x = self.value(node.input[0])
        scale, zp, _ = self._qparams(node, "DequantizeLinear")
        q = self.g.tensors[x].quantization
        if q is None and self.g.tensors[x].type in ("INT8", "UINT8", "INT16"):
            self.g.tensors[x].quantization = Quantization(scale=scale, zero_point=zp)
        elif q is None or not (np.array_equal(q.scale, scale) and np.array_equal(q.zero_point, zp)):
            raise _Unsupported(f"input '{node.input[0]}' ({self.ttype(x)}) already carries other quantization "
                               "parameters (TFLite DEQUANTIZE reads its input tensor's)")
        self._op("DEQUANTIZE", [x], [self.out(node, type="FLOAT32")])

    def _custom_domain_reason(self, node) -> str:
        from converters import onnx_quantized

        if node.domain == onnx_quantized.MS:
            return (f"onnxruntime contrib op '{node.op_type}' has no mapping (mapped: "
                    f"{', '.join(onnx_quantized.CONTRIB_OPS)})")
        return f"custom domain '{node.domain}' has no mapping"

    def _given_quantization(self, model: Model) -> dict:
        """The ranges a quantized ONNX source carried, put on the float tensors as ``Tensor.quantization``
        (the hand-off to the quantizer, see the module docstring) and summarised for the convert report."""
        from converters.graph import producers as producer_map

        q = self.quantized
        tensors = model.subgraphs[0].tensors
        producers = producer_map(model)
        on_tensors, weights = {}, {}
        for name, e in q.given.items():
            t = self.values.get(name)
            if e["kind"] == "weight":
                weights[name] = {"scale": e["scale"].tolist() if e["scale"].size <= 8 else
                                 f"{e['scale'].size} per-channel scales along axis {e['axis']}",
                                 "zero_point": e["zero_point"].tolist() if e["zero_point"].size <= 8 else "per channel",
                                 "dtype": e["dtype"]}
                if e["scale"].size > 1 and (t is None or tensors[t].shape[e["axis"]] != e["scale"].size):
                    continue  # the weights were rearranged (transposed for FULLY_CONNECTED / CONV_2D): notes only
            if t is None or tensors[t].type != "FLOAT32":
                continue
            # TFLite's idiom for a recorded range on a float tensor (as its converter leaves fake-quant ranges):
            # min / max only, no scale -- readers do not take the tensor for a quantized one
            tensors[t].quantization = Quantization(scale=np.zeros(0, np.float32), zero_point=np.zeros(0, np.int64),
                                                   quantized_dimension=e["axis"], min=e["min"].copy(),
                                                   max=e["max"].copy())
            on_tensors[tensors[t].name] = {"scale": float(e["scale"][0]) if e["scale"].size == 1 else
                                           e["scale"].tolist(),
                                           "zero_point": int(e["zero_point"][0]) if e["zero_point"].size == 1 else
                                           e["zero_point"].tolist(), "dtype": e["dtype"], "kind": e["kind"],
                                           "min": e["min"].tolist(), "max": e["max"].tolist()}
            if e["kind"] == "activation" and e["scale"].size == 1:
                self._range_before_moves(model, t, producers)
        out = {"format": q.source or "float (onnxruntime fused ops only)", "rewritten": dict(q.rewritten),
               "given_ranges": on_tensors, "weights": weights}
        if q.source and "dynamic" in q.source:
            out["hint"] = ("the source was quantized dynamically (int8 weights, activations quantized at run time): "
                           "--quantize dynamic is its like-for-like TFLite form")
        if q.source and "qdq" in q.source:
            out["hint_qdq"] = ("QDQ source: its activation ranges are on the float tensors (Tensor.quantization, "
                               "min / max) for the quantizer to use instead of calibrating")
        return out

    @staticmethod
    def _range_before_moves(model: Model, t: int, producers: dict[int, int]) -> None:
        """The per-tensor range given on ``t`` also on the float tensors an op that only moves values (the
        TRANSPOSE of an NCHW sandwich, a RESHAPE) wrote it from: the layout pass removes such an op and its input
        takes its place (a Conv's NHWC output before the TRANSPOSE back to NCHW carries the Conv's QDQ range)."""
        sg = model.subgraphs[0]
        q = sg.tensors[t].quantization
        seen = {t}
        while t in producers:
            op = sg.operators[producers[t]]
            if not op_table.row(model.op_name(op)).moves_values or not op.inputs or op.inputs[0] < 0:
                return
            t = op.inputs[0]
            src = sg.tensors[t]
            given = src.quantization is not None and src.quantization.min is not None
            if t in seen or src.type != "FLOAT32" or given:
                return
            seen.add(t)
            src.quantization = Quantization(scale=np.zeros(0, np.float32), zero_point=np.zeros(0, np.int64),
                                            quantized_dimension=0, min=np.array(q.min), max=np.array(q.max))

    def _handler(self, op_type: str):
        """handler(node, attrs) for an ONNX op: its _op_<OpType> method, or its builder in _ONE_TO_ONE; None."""
        method = getattr(self, f"_op_{op_type}", None)
        if method is not None or op_type not in _ONE_TO_ONE:
            return method
        builder, op = _ONE_TO_ONE[op_type]
        build = getattr(self, builder)
        return lambda node, a: build(node, a, op)

    def _no_handler(self, node) -> str:
        """The refusal of an op without a handler; for one evaluated at convert time only, the graph inputs its
        inputs are computed from (what to pin or give a shape to)."""
        reason = _no_mapping(node.op_type)
        if node.op_type in FOLDED_OPS:
            deps = sorted({d for i in node.input if i and i not in self.consts for d in self._input_ancestors(i)})
            if deps:
                reason += (f" (it depends on the value of input {', '.join(repr(d) for d in deps)}: pin it with "
                           "--input-value NAME=VALUE)")
        return reason

    def _problem(self, name, node, reason):
        self.problems.append(f"node '{name}' ({node.op_type}, opset {self.opset}): {reason}")

    def _graph_inputs(self) -> list[str]:
        inits = {i.name for i in self.proto.graph.initializer}
        return [i.name for i in self.proto.graph.input if i.name not in inits]

    def _given_shapes(self, names: list[str]) -> dict[str, tuple[int, ...]]:
        given = self.input_shapes
        if given is None:
            return {}
        if not isinstance(given, dict):
            if len(names) != 1:
                raise SettingError(f"{SHAPE_FLAG}: a bare shape is for a one-input model; this one has inputs "
                                      f"{', '.join(names)} (give NAME:D0,D1,... for each)")
            given = {names[0]: given}
        out = {}
        for name, shape in given.items():
            if name not in names:
                raise SettingError(f"{SHAPE_FLAG}: the model has no input '{name}' (inputs: {', '.join(names)})")
            try:
                dims = tuple(int(d) for d in shape)
            except (TypeError, ValueError):
                raise SettingError(f"{SHAPE_FLAG}: input '{name}': {shape!r} is not a list of ints") from None
            if not dims or any(d < 1 for d in dims):
                raise SettingError(f"{SHAPE_FLAG}: input '{name}': dims must be positive, not {list(dims)}")
            out[name] = dims
        return out

    def _pin_inputs(self):
        """``input_values``: each named graph input becomes an initializer holding its value (so it leaves the
        signature, and what is computed from it folds)."""
        from edge_sdk import log
        from onnx import numpy_helper

        if not self.input_values:
            return
        if not isinstance(self.input_values, dict):
            raise SettingError(f"{PIN_FLAG}: a dict {{input name: value}} is expected, not "
                                  f"{type(self.input_values).__name__}")
        graph = self.proto.graph
        names = self._graph_inputs()
        given_shapes = self.input_shapes if isinstance(self.input_shapes, dict) else {}
        for name, value in self.input_values.items():
            if name not in names:
                raise SettingError(f"{PIN_FLAG}: the model has no input '{name}' (inputs: {', '.join(names)})")
            if name in given_shapes:
                raise SettingError(f"{PIN_FLAG}: input '{name}' is pinned to a value; give it no shape "
                                      "(input_shapes) as well")
            vi = next(v for v in graph.input if v.name == name)
            array = _pinned_value(name, value, vi)
            keep = [v for v in graph.input if v.name != name]
            del graph.input[:]
            graph.input.extend(keep)
            graph.initializer.append(numpy_helper.from_array(array, name))
            self.pinned[name] = array
            shown = _pinned_summary(array)
            note = (f"input '{name}' pinned to {shown} ({array.dtype.name}"
                    f"{' ' + 'x'.join(map(str, array.shape)) if array.ndim else ' scalar'}): it is a constant "
                    "of the converted model, not an input")
            log.info(note)
            self.notes.append(note)

    def _fix_inputs(self):
        """Given shapes (``input_shapes``) replace the inputs' declared ones (their static dims must agree);
        a dynamic dim left open is an error (axis 0: 1, with a note). Dynamic dims left open are remembered for the
        shape_signature (-1); a given shape is static there."""
        from edge_sdk import log

        graph = self.proto.graph
        inits = {i.name for i in graph.initializer}
        given = self._given_shapes([i.name for i in graph.input if i.name not in inits])
        for vi in graph.input:
            if vi.name in inits:
                continue
            tt = vi.type.tensor_type
            dims = [_dim_text(d) for d in tt.shape.dim] if tt.HasField("shape") else None
            if dims is not None and any(not d.isdigit() for d in dims):  # a dim_param, no dim or a dim of 0
                self.open_dims[vi.name] = {i: d for i, d in enumerate(dims) if not d.isdigit()}
            if vi.name in given:
                shape = given[vi.name]
                if dims is not None:
                    bad = [i for i, (d, g) in enumerate(zip(dims, shape)) if d.isdigit() and int(d) != g]
                    if len(dims) != len(shape) or bad:
                        raise SettingError(f"{SHAPE_FLAG}: input '{vi.name}' is [{', '.join(dims)}]; "
                                              f"{list(shape)} does not fit it (rank {len(dims)}, static dims kept)")
                # a given shape is the model's: every Shape / Reshape chain folds at it, so its signature is static
                # (a -1 there would tell LiteRT, `edge check` and `edge flash` that the input resizes, which the
                # folded constants refuse, and would make each of them ask for --input-shape again)
                del tt.shape.dim[:]
                for g in shape:
                    tt.shape.dim.add().dim_value = g
                continue
            if dims is None:
                continue  # reported below: no shape declared
            open_dims = [i for i, d in enumerate(dims) if not d.isdigit()]
            if self.store_open_dims and open_dims:
                note = (f"input '{vi.name}' [{', '.join(dims)}]: its dynamic dims are stored as 1 (-1 in the shape "
                        f"signature when the converted model resizes; {_shape_flag(vi.name, dims)} to store others)")
                log.warning(note)
                self.notes.append(note)
            elif [i for i in open_dims if i > 0]:
                which = ", ".join(f"{i} ({dims[i]})" for i in open_dims)
                raise ConversionError(f"input '{vi.name}' has dynamic dims [{', '.join(dims)}] (axis {which}): give "
                                      f"its shape with {_shape_flag(vi.name, dims)}")
            elif open_dims:
                note = (f"input '{vi.name}' [{', '.join(dims)}]: the dynamic batch dim '{dims[0]}' is set to 1 "
                        f"(kept as -1 in the shape signature: resizable at run time, as LiteRT's converter does; "
                        f"--input-shape {vi.name}:... to fix another)")
                log.warning(note)
                self.notes.append(note)
        for is_input, infos in ((True, graph.input), (False, graph.output)):
            for vi in infos:
                tt = vi.type.tensor_type
                if not tt.HasField("shape"):
                    if is_input and vi.name not in inits:
                        self.problems.append(f"graph input '{vi.name}': no shape declared (a static shape is required)")
                    continue
                if is_input and vi.name in given:
                    continue
                flags = []
                for d in tt.shape.dim:
                    dynamic = not d.HasField("dim_value") or d.dim_value <= 0
                    flags.append(dynamic)
                    if dynamic and is_input and vi.name not in inits:
                        d.Clear()
                        d.dim_value = 1
                self.dynamic[vi.name] = flags
        if self.problems:
            raise ConversionError("the ONNX model's inputs cannot be made static", self.problems)

    # ------------------------------------------------------------------ folding and shape inference
    def _fold_and_infer(self):
        onnx = self.onnx
        from onnx import numpy_helper

        graph = self.proto.graph
        for init in graph.initializer:
            self.consts[init.name] = numpy_helper.to_array(init)
        from converters import onnx_control

        namer = None
        has_control = any(n.op_type in ("If", "Loop", "Scan") for n in graph.node)
        for _ in range(48 if has_control else 12):
            self._infer()
            changed = False
            keep = []
            for index, node in enumerate(graph.node):
                if node.op_type in ("If", "Loop", "Scan") and node.domain in ("", "ai.onnx"):
                    namer = namer or onnx_control.Namer(graph)
                    resolved = self._resolve_control(node, index, namer)
                    if resolved is None:
                        keep.append(node)
                        continue
                    nodes, consts, note = resolved
                    keep.extend(nodes)
                    for name, v in consts.items():
                        self.consts[name] = np.asarray(v)
                        self.shapes[name] = tuple(np.shape(v))
                    self.control_notes.append(note)
                    changed = True
                    continue
                value = self._try_fold(node)
                if value is None:
                    keep.append(node)
                    continue
                changed = True
                for name, v in zip(node.output, value):
                    if name:
                        self.consts[name] = np.asarray(v)
                        self.shapes[name] = tuple(np.shape(v))
            if not changed:
                break
            del graph.node[:]
            graph.node.extend(keep)
            # folded values become initializers so shape inference sees them as data
            existing = {i.name for i in graph.initializer}
            for name, v in self.consts.items():
                if name not in existing:
                    graph.initializer.append(numpy_helper.from_array(np.asarray(v), name))
        self._infer()
        missing = [o for n in graph.node for o in n.output if o and not _static(self.shapes.get(o))]
        if missing:
            self._measure_shapes(missing)
        del onnx

    def _resolve_control(self, node, index, namer):
        """If / Loop / Scan replaced by ONNX nodes (a branch inlined, a body unrolled), or None."""
        from converters import onnx_control

        name = node.name or f"{node.op_type}_{index}"
        try:
            if node.op_type == "If":
                return onnx_control.resolve_if(node, name, self.consts, namer)
            if node.op_type == "Loop":
                return onnx_control.resolve_loop(node, name, self.consts, namer, self.opset)
            return onnx_control.resolve_scan(node, name, self.shapes, namer, self.opset)
        except Exception:  # noqa: BLE001 -- a malformed control node stays; its handler reports it
            return None

    def _control_blocker(self, node) -> str:
        """Why an If / Loop / Scan is still in the graph after folding (one line)."""
        from converters import onnx_control

        if node.op_type == "If":
            return onnx_control.if_blocker(node, self._input_ancestors(node.input[0]), self.consts)
        if node.op_type == "Loop":
            reason = onnx_control.loop_blocker(node, self.consts, self.opset)
            if reason is None:
                return "loop of 0 iterations with scan outputs (empty outputs)"
            deps = self._input_ancestors(node.input[0]) if node.input and node.input[0] not in self.consts else []
            if deps and "trip count" in reason:
                reason += f" (it depends on input {', '.join(repr(d) for d in deps)}: pin it with --input-value)"
            return reason
        return onnx_control.scan_blocker(node, self.shapes, self.opset) or "the Scan could not be unrolled"

    def _input_ancestors(self, name: str) -> list[str]:
        """The graph inputs value ``name`` is computed from (a value inside an If branch / Loop body too: through
        the outer values it reads)."""
        sources, _ = _dataflow(self.proto.graph)
        inputs = set(self._graph_inputs())
        seen, todo, found = set(), [name], []
        while todo:
            v = todo.pop()
            if v in seen or not v:
                continue
            seen.add(v)
            if v in inputs:
                found.append(v)
            else:
                todo.extend(sources.get(v, ()))
        return sorted(found)

    def _infer(self):
        onnx = self.onnx
        try:
            inferred = onnx.shape_inference.infer_shapes(self.proto, data_prop=True)
        except Exception:  # noqa: BLE001 -- inference is an aid; gaps are measured below
            inferred = self.proto
        g = inferred.graph
        graphs = [g]
        for sub in graphs:  # the main graph, then the If branches / Loop bodies left for run-time IF / WHILE
            infos = list(sub.input) + list(sub.value_info) + list(sub.output)
            for vi in infos if sub is g else [v for v in infos if v.name not in self.consts]:
                tt = vi.type.tensor_type
                if tt.elem_type:
                    self.types[vi.name] = tt.elem_type
                if tt.HasField("shape"):
                    dims = tuple(d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim)
                    if _static(dims) or vi.name not in self.shapes:
                        self.shapes[vi.name] = dims
            for init in sub.initializer:
                self.types[init.name] = init.data_type
                self.shapes[init.name] = tuple(init.dims)
            for node in sub.node:
                graphs.extend(_node_graphs(node))
        for name, v in self.consts.items():
            self.shapes[name] = tuple(np.shape(v))

    def _try_fold(self, node):
        if node.domain not in ("", "ai.onnx") or node.op_type in _NONDETERMINISTIC:
            return None
        if node.op_type in ("If", "Loop", "Scan"):
            return None
        if node.op_type == "Shape":
            shape = self.shapes.get(node.input[0])
            if not _static(shape):
                return None
            a = _attrs(node)
            start, end = a.get("start", 0), a.get("end", len(shape))
            return [np.array(shape[slice(start, end)], np.int64)]
        if node.op_type == "Size":
            shape = self.shapes.get(node.input[0])
            return [np.array(int(np.prod(shape)), np.int64)] if _static(shape) else None
        if node.op_type == "EyeLike":  # only the input's (static) shape and type matter
            shape = self.shapes.get(node.input[0])
            if not _static(shape) or len(shape) != 2:
                return None
            from onnx import helper

            a = _attrs(node)
            dtype = helper.tensor_dtype_to_np_dtype(int(a.get("dtype", self.types.get(node.input[0], 1))))
            return [np.eye(shape[0], shape[1], int(a.get("k", 0)), dtype=dtype)]
        inputs = [i for i in node.input if i]
        if node.op_type != "Constant" and (not inputs or any(i not in self.consts for i in inputs)):
            return None
        from onnx.reference import ReferenceEvaluator

        try:
            ev = ReferenceEvaluator(node, opsets={"": self.opset})
            return ev.run(None, {i: self.consts[i] for i in inputs})
        except Exception:  # noqa: BLE001 -- not foldable here: emitted (and reported if unsupported) later
            return None

    def _measure_shapes(self, names: list[str]):
        """Run the graph once on the reference evaluator to learn the shapes inference left open."""
        import onnx
        from onnx import helper
        from onnx.reference import ReferenceEvaluator

        m = onnx.ModelProto()
        m.CopyFrom(self.proto)
        del m.graph.output[:]
        m.graph.output.extend([helper.make_empty_tensor_value_info(n) for n in names])
        runs = []
        for seed in (0, 1):  # two different inputs: a shape that depends on the data is not static
            feeds = {}
            for name in self._graph_inputs():
                dtype = onnx.helper.tensor_dtype_to_np_dtype(self.types.get(name, 1))
                values = np.random.default_rng(seed).standard_normal(self.shapes[name]) + 1.5 * seed
                feeds[name] = (values if dtype.kind == "f" else np.ones(self.shapes[name])).astype(dtype)
            try:
                runs.append(ReferenceEvaluator(m).run(None, feeds))
            except Exception:  # noqa: BLE001
                return  # the affected nodes report "no static shape"
        for n, r, r2 in zip(names, runs[0], runs[1]):
            if isinstance(r, (list, tuple)) or isinstance(r2, (list, tuple)) or np.shape(r) != np.shape(r2):
                continue  # a sequence (a list of tensors) or a data-dependent shape: no static tensor shape
            self.shapes[n] = tuple(np.shape(r))
            if n not in self.types:
                self.types[n] = onnx.helper.np_dtype_to_tensor_dtype(np.asarray(r).dtype)

    # ------------------------------------------------------------------ emission helpers
    def _unique(self, name: str) -> str:
        base, k = name, 1
        while name in self.names:
            name = f"{base}_{k}"
            k += 1
        self.names.add(name)
        return name

    def _new(self, name, shape, type="FLOAT32") -> int:
        return self.g.tensor(self._unique(name), tuple(int(d) for d in shape), type)

    def _tmp(self, suffix, shape, type="FLOAT32") -> int:
        return self._new(f"{self.node_name}/{suffix}", shape, type)

    def _const(self, suffix, value, type=None) -> int:
        value = np.asarray(value)
        if type is None:
            type = "FLOAT32" if value.dtype.kind == "f" else {"i": "INT32", "b": "BOOL", "u": "UINT8"}[value.dtype.kind]
            if value.dtype == np.int64 or value.dtype == np.int32:
                type = "INT32" if value.dtype == np.int32 else "INT64"
        from edge_sdk.model.types import TENSOR_TYPES

        value = value.astype(TENSOR_TYPES[type][1])
        return self._constant_tensor(self._unique(f"{self.node_name}/{suffix}"), value, type)

    def _constant_tensor(self, name, value: np.ndarray, type: str) -> int:
        """A constant tensor (0-d values stay 0-d: GraphBuilder.tensor would make them 1-d)."""
        from edge_sdk.model.types import Buffer

        t = self.g.tensor(name, value.shape, type)
        data = np.asarray(value)
        self.g.buffers.append(Buffer(data.astype(data.dtype.newbyteorder("<"), copy=False).tobytes()))
        self.g.tensors[t].buffer = len(self.g.buffers) - 1
        return t

    def _i32(self, suffix, values) -> int:
        return self._const(suffix, np.asarray(values, np.int64).astype(np.int32), "INT32")

    def _f32(self, suffix, values) -> int:
        return self._const(suffix, np.asarray(values, np.float32), "FLOAT32")

    def _op(self, op, inputs, outputs, version=1, **options):
        self.g.op(op, list(inputs), list(outputs), version=version, **options)

    def shape(self, t: int) -> tuple:
        return self.g.tensors[t].shape

    def ttype(self, t: int) -> str:
        return self.g.tensors[t].type

    def const(self, name: str) -> np.ndarray | None:
        return self.consts.get(name) if name else None

    def need_const(self, name: str, what: str) -> np.ndarray:
        v = self.const(name)
        if v is None:
            raise _Unsupported(f"{what} ('{name}') must be a constant; it is computed at run time")
        return v

    def value(self, name: str) -> int:
        """The TFLite tensor holding ONNX value ``name`` (constants become constant tensors on first use)."""
        if name in self.values:
            return self.values[name]
        v = self.consts[name]
        if v.dtype.kind == "f":
            v = v.astype(np.float32)
        type = "FLOAT32" if v.dtype.kind == "f" else None
        if v.dtype == np.bool_:
            type = "BOOL"
        t = self._constant_tensor(self._unique(name), v, type or _np_type(v.dtype))
        self.values[name] = t
        return t

    def out(self, node, i=0, type=None) -> int:
        """A new tensor for the node's output ``i`` (ONNX name, inferred static shape)."""
        name = node.output[i]
        if type is None:
            type = _ONNX_TYPES.get(self.types.get(name, 1), "FLOAT32")
        t = self._new(name or f"{self.node_name}/out{i}", self.shapes[name] if name else (), type)
        if name:
            self.values[name] = t
        return t

    def alias(self, node, t: int, i: int = 0):
        self.values[node.output[i]] = t

    def transpose(self, t: int, perm, suffix="transpose", out=None) -> int:
        shape = self.shape(t)
        if out is None:
            out = self._tmp(suffix, [shape[p] for p in perm], self.ttype(t))
        self._op("TRANSPOSE", [t, self._i32(suffix + "/perm", perm)], [out])
        return out

    def reshape(self, t: int, shape, suffix="reshape", out=None) -> int:
        if out is None:
            out = self._tmp(suffix, shape, self.ttype(t))
        shape = self.shape(out)
        self._op("RESHAPE", [t, self._i32(suffix + "/shape", list(shape))], [out], new_shape=list(shape))
        return out

    def binary(self, op, a: int, b: int, suffix, out=None, **options) -> int:
        if out is None:
            shape = np.broadcast_shapes(self.shape(a), self.shape(b))
            out = self._tmp(suffix, shape, self.ttype(a))
        self._op(op, [a, b], [out], **options)
        return out

    def unary(self, op, a: int, suffix, out=None, **options) -> int:
        if out is None:
            out = self._tmp(suffix, self.shape(a), self.ttype(a))
        self._op(op, [a], [out], **options)
        return out

    def axes(self, axes, rank) -> list[int]:
        out = []
        for ax in axes:
            ax = int(ax)
            if not -rank <= ax < rank:
                raise _Unsupported(f"axis {ax} out of range for rank {rank}")
            out.append(ax % rank)
        return out

    def float_input(self, node, i=0) -> int:
        t = self.value(node.input[i])
        if self.ttype(t) != "FLOAT32":
            raise _Unsupported(f"input {i} has type {self.ttype(t)}; only float tensors are supported here")
        return t

    # ------------------------------------------------------------------ outputs and verification
    def _outputs(self):
        seen = set()
        for o in self.proto.graph.output:
            if o.name in self.values:
                t = self.values[o.name]
            else:
                self.node_name = o.name
                t = self.value(o.name)  # a constant output
            if t in seen or t in self.g.inputs or self.g.tensors[t].buffer != 0:
                src = t
                t = self._new(o.name, self.shape(src), self.ttype(src))
                self.node_name = o.name
                self.reshape(src, self.shape(src), "copy", out=t)
            seen.add(t)
            if self.g.tensors[t].name != o.name and o.name not in self.names:
                # an alias (Identity, an inlined If branch): the model's output keeps the ONNX output's name
                self.names.add(o.name)
                self.g.tensors[t].name = o.name
            flags = self.dynamic.get(o.name, [])
            if any(flags) and len(flags) == len(self.shape(t)):
                self.g.tensors[t].shape_signature = tuple(-1 if d else s for d, s in zip(flags, self.shape(t)))
            self.g.outputs.append(t)

    def _float64_note(self):
        """Say that float64 (double) values become float32, as onnx2tf and TFLite's converter do: magnitudes above
        float32's largest (3.4e38) become +-inf, below its smallest subnormal (1.4e-45) 0, and 53-bit mantissas
        round to 24 bits (a relative error up to 6e-8)."""
        graph = self.proto.graph
        io = [v.name for v in list(graph.input) + list(graph.output)
              if v.type.tensor_type.elem_type == 11 and v.name in self.values]
        consts = sum(1 for i in graph.initializer if i.data_type == 11)
        consts += sum(1 for n in graph.node if n.op_type == "Constant" for a in n.attribute
                      if a.name == "value" and a.t.data_type == 11)
        if not io and not consts:
            return
        what = ", ".join([f"'{n}'" for n in io] + ([f"{consts} constant(s)"] if consts else []))
        self.notes.append(f"float64 values computed in float32 ({what}): magnitudes above 3.4e38 become inf, "
                          "below 1.4e-45 zero, and each value rounds to float32's 24-bit mantissa (relative error "
                          "up to 6e-8)")
        from edge_sdk import log

        log.warning(self.notes[-1])  # the convert summary does not print import notes: said on the terminal here

    def _verify(self, model: Model):
        """Prepare the result with our interpreter: it must run, and its shapes must be ONNX's."""
        waiting = sorted({model.op_name(op) for sg in model.subgraphs for op in sg.operators
                          if op_table.row(model.op_name(op)).subgraphs
                          and op_table.runtime_refusal("python", model.op_name(op), model.op_version(op))})
        if waiting:  # run-time IF / WHILE before our interpreter has their kernels: each subgraph without one is
            # prepared on its own (a branch's shapes checked), the others are written unprepared
            self.notes.append(f"not prepared by edge-sdk's interpreter (it has no {' / '.join(waiting)} kernel "
                              "here): the subgraphs without one were prepared one by one; LiteRT runs the model")
            for k, sub in enumerate(model.subgraphs):
                if not any(model.op_name(op) in waiting for op in sub.operators):
                    self._prepare(Model(operator_codes=model.operator_codes, subgraphs=[sub], buffers=model.buffers),
                                  f"subgraph {k} ('{sub.name}')")
            return
        self._prepare(model, "the converted model")

    def _prepare(self, model: Model, what: str):
        """Prepare ``model`` in our interpreter: it must run, and its shapes must be the converter's."""
        from edge_sdk.runtime.interpreter import Interpreter

        declared = [t.shape for t in model.subgraphs[0].tensors]
        try:
            it = Interpreter(model=model)
            it.allocate_tensors()
        except ModelError as exc:
            raise ConversionError(f"{what} does not prepare in edge-sdk's interpreter", [str(exc)]) from None
        got = it.tensor_shapes(0)
        bad = [f"tensor '{t.name}': converter says {d}, kernel computes {g}"
               for t, d, g in zip(model.subgraphs[0].tensors, declared, got) if tuple(d) != tuple(g)]
        if bad:
            raise ConversionError(f"internal shape mismatch in {what}", bad[:20])

    # ------------------------------------------------------------------ layout helpers
    def _spatial(self, node, a, x_shape, kernel, is_pool=False, ceil_mode=0) -> _Spatial:
        nsp = len(x_shape) - 2
        if nsp not in (1, 2):
            raise _Unsupported(f"{nsp}-D spatial input {x_shape} (only 1-D and 2-D are supported)")
        size = tuple(x_shape[2:])
        strides = tuple(a.get("strides", [1] * nsp))
        dil = tuple(a.get("dilations", [1] * nsp))
        pads = list(a.get("pads", [0] * (2 * nsp)))
        auto = a.get("auto_pad", "NOTSET")
        if auto in ("SAME_UPPER", "SAME_LOWER"):
            pads = [0] * (2 * nsp)
            for d in range(nsp):
                lo, hi = _same_pads(size[d], kernel[d], strides[d], dil[d])
                if auto == "SAME_LOWER":
                    lo, hi = hi, lo
                pads[d], pads[d + nsp] = lo, hi
        elif auto == "VALID":
            pads = [0] * (2 * nsp)
        pp = tuple((pads[d], pads[d + nsp]) for d in range(nsp))
        if nsp == 1:
            return _Spatial((1, size[0]), (1, kernel[0]), (1, strides[0]), (1, dil[0]), ((0, 0), pp[0]))
        return _Spatial(size, tuple(kernel), strides, dil, pp)

    def _to_nhwc(self, x: int) -> int:
        """NCHW (or NCL) tensor -> NHWC (NCL -> N1LC)."""
        shape = self.shape(x)
        t = self.transpose(x, _perm_to_last(len(shape)), "to_nhwc")
        if len(shape) == 3:
            n, c, length = shape
            t = self.reshape(t, (n, 1, length, c), "to_n1lc")
        return t

    def _from_nhwc(self, t: int, out: int):
        """NHWC tensor -> the node's NCHW (or NCL) output tensor ``out``."""
        rank = len(self.shape(out))
        if rank == 3:
            n, _, length, c = self.shape(t)
            t = self.reshape(t, (n, length, c), "from_n1lc")
        self.transpose(t, _perm_to_first(rank), "to_nchw", out=out)

    def _pad_nhwc(self, t: int, pads, value: float) -> int:
        (pt, pb), (pl, pr) = pads
        if not (pt or pb or pl or pr):
            return t
        n, h, w, c = self.shape(t)
        out = self._tmp("pad", (n, h + pt + pb, w + pl + pr, c))
        paddings = self._i32("paddings", [[0, 0], [pt, pb], [pl, pr], [0, 0]])
        if value == 0:
            self._op("PAD", [t, paddings], [out])
        else:
            self._op("PADV2", [t, paddings, self._f32("pad_value", [value])], [out])
        return out

    def _padding_mode(self, sp: _Spatial) -> str:
        """'VALID' / 'SAME' when TFLite's own padding equals the ONNX pads, else 'EXPLICIT'."""
        if all(p == (0, 0) for p in sp.pads):
            return "VALID"
        same = tuple(_same_pads(sp.size[d], sp.kernel[d], sp.strides[d], sp.dilations[d]) for d in range(2))
        return "SAME" if same == sp.pads else "EXPLICIT"

    # ------------------------------------------------------------------ convolution
    def _op_Conv(self, node, a):
        x = self.float_input(node)
        w = self.need_const(node.input[1], "weights").astype(np.float32)
        b = self.const(node.input[2]) if len(node.input) > 2 and node.input[2] else None
        if len(node.input) > 2 and node.input[2] and b is None:
            raise _Unsupported("bias must be a constant")
        xs = self.shape(x)
        if len(xs) == 5:
            self._conv3d(node, a, x, w, b)
            return
        if len(xs) not in (3, 4):
            raise _Unsupported(f"{len(xs) - 2}-D convolution (only 1-D, 2-D and 3-D are supported)")
        group = int(a.get("group", 1))
        cin, cout = xs[1], w.shape[0]
        if w.shape[1] * group != cin:
            raise _Unsupported(f"weights {w.shape} do not match {cin} input channels in {group} groups")
        sp = self._spatial(node, a, xs, w.shape[2:])
        if len(xs) == 3:
            w = w[:, :, None, :]
        bias = np.zeros(cout, np.float32) if b is None else np.asarray(b, np.float32)
        out = self.out(node)
        os_ = self.shape(out)
        oh, ow = (1, os_[2]) if len(xs) == 3 else os_[2:]
        t = self._to_nhwc(x)
        mode = self._padding_mode(sp)
        if mode == "EXPLICIT":
            t = self._pad_nhwc(t, sp.pads, 0.0)
            mode = "VALID"
        n = xs[0]
        conv_out = self._tmp("conv_nhwc", (n, oh, ow, cout))
        opts = {"padding": mode, "stride_h": sp.strides[0], "stride_w": sp.strides[1],
                    "dilation_h_factor": sp.dilations[0], "dilation_w_factor": sp.dilations[1],
                    "fused_activation_function": "NONE"}
        if group == 1:
            self._op("CONV_2D", [t, self._f32("weights", w.transpose(0, 2, 3, 1)), self._f32("bias", bias)],
                     [conv_out], **opts)
        elif group == cin and w.shape[1] == 1:
            self._op("DEPTHWISE_CONV_2D", [t, self._f32("weights", w.transpose(1, 2, 3, 0)), self._f32("bias", bias)],
                     [conv_out], depth_multiplier=cout // cin, **opts)
        else:
            self._grouped_conv("CONV_2D", t, conv_out, group, bias, opts,
                               lambda lo, hi: w[lo:hi].transpose(0, 2, 3, 1))
        self._from_nhwc(conv_out, out)

    def _grouped_conv(self, op, t, conv_out, group, bias, opts, group_weights):
        """A grouped convolution of channels-last ``t`` into ``conv_out``: a SPLIT over the channels (last axis),
        one ``op`` per group with the weights ``group_weights(lo, hi)`` of output channels lo..hi and that
        slice of the bias, and a CONCATENATION of the results (TFLite's CONV_2D / CONV_3D take no groups)."""
        ts, os_ = self.shape(t), self.shape(conv_out)
        axis = len(ts) - 1
        gin, gout = ts[axis] // group, os_[axis] // group
        parts = [self._tmp(f"group{g}", ts[:axis] + (gin,)) for g in range(group)]
        self._op("SPLIT", [self._i32("split_axis", axis), t], parts, num_splits=group)
        outs = []
        for g in range(group):
            lo, hi = g * gout, (g + 1) * gout
            o = self._tmp(f"group{g}_conv", os_[:axis] + (gout,))
            self._op(op, [parts[g], self._f32(f"weights{g}", group_weights(lo, hi)),
                          self._f32(f"bias{g}", bias[lo:hi])], [o], **opts)
            outs.append(o)
        self._op("CONCATENATION", outs, [conv_out], axis=axis, fused_activation_function="NONE")

    def _conv3d(self, node, a, x, w, b):
        """3-D Conv: NCDHW -> NDHWC (a TRANSPOSE the layout pass moves), CONV_3D with DHWIO weights (LiteRT's
        layout), explicit pads as a PAD where TFLite's SAME / VALID differ from ONNX's; groups as a SPLIT over
        the channels, one CONV_3D per group, a CONCATENATION (CONV_3D itself has no groups)."""
        xs = self.shape(x)
        n, cin = xs[0], xs[1]
        size, k = list(xs[2:]), [int(v) for v in w.shape[2:]]
        group, cout = int(a.get("group", 1)), w.shape[0]
        if group < 1 or cin % group or cout % group or w.shape[1] * group != cin:
            raise _Unsupported(f"weights {w.shape} do not match {cin} input channels in {group} groups")
        strides = [int(v) for v in a.get("strides", [1, 1, 1])]
        dil = [int(v) for v in a.get("dilations", [1, 1, 1])]
        pads = [int(v) for v in a.get("pads", [0] * 6)]
        auto = a.get("auto_pad", "NOTSET")
        same = [_same_pads(size[d], k[d], strides[d], dil[d]) for d in range(3)]
        if auto in ("SAME_UPPER", "SAME_LOWER"):
            pp = same if auto == "SAME_UPPER" else [(hi, lo) for lo, hi in same]
        elif auto == "VALID":
            pp = [(0, 0)] * 3
        else:
            pp = [(pads[d], pads[d + 3]) for d in range(3)]
        out = self.out(node)
        osz = list(self.shape(out)[2:])
        t = self.transpose(x, [0, 2, 3, 4, 1], "to_ndhwc")
        if all(p == (0, 0) for p in pp):
            mode = "VALID"
        elif list(pp) == list(same):
            mode = "SAME"
        else:
            mode = "VALID"
            padded = self._tmp("pad", (n, *(size[d] + sum(pp[d]) for d in range(3)), cin))
            self._op("PAD", [t, self._i32("paddings", [[0, 0]] + [list(p) for p in pp] + [[0, 0]])], [padded])
            t = padded
        opts = {"padding": mode, "stride_d": strides[0], "stride_h": strides[1], "stride_w": strides[2],
                "dilation_d_factor": dil[0], "dilation_h_factor": dil[1], "dilation_w_factor": dil[2],
                "fused_activation_function": "NONE"}
        bias = np.zeros(cout, np.float32) if b is None else np.asarray(b, np.float32)
        conv_out = self._tmp("conv_ndhwc", (n, *osz, cout))
        wt = w.transpose(2, 3, 4, 1, 0)  # [O, C/g, kd, kh, kw] -> [kd, kh, kw, C/g, O]
        if group == 1:
            self._op("CONV_3D", [t, self._f32("weights", wt), self._f32("bias", bias)], [conv_out], **opts)
        else:
            self._grouped_conv("CONV_3D", t, conv_out, group, bias, opts, lambda lo, hi: wt[..., lo:hi])
        self.transpose(conv_out, [0, 4, 1, 2, 3], "to_ncdhw", out=out)

    def _op_ConvTranspose(self, node, a):
        x = self.float_input(node)
        w = self.need_const(node.input[1], "weights").astype(np.float32)
        b = self.const(node.input[2]) if len(node.input) > 2 and node.input[2] else None
        xs = self.shape(x)
        if len(xs) not in (3, 4):
            raise _Unsupported(f"{len(xs) - 2}-D transposed convolution (only 1-D and 2-D are supported)")
        group = int(a.get("group", 1))
        if group < 1 or xs[1] % group or w.shape[0] != xs[1]:
            raise _Unsupported(f"weights {w.shape} for {xs[1]} input channels in {group} groups")
        nsp = len(xs) - 2
        out = self.out(node)
        cout = w.shape[1] * group
        if len(xs) == 3:
            w = w[:, :, None, :]
        dil = [1] + list(a.get("dilations", [1])) if nsp == 1 else list(a.get("dilations", [1, 1]))
        if any(d != 1 for d in dil):  # TRANSPOSE_CONV has no dilation: the kernel with zeros between its taps
            kh, kw = w.shape[2:]
            wide = np.zeros(w.shape[:2] + ((kh - 1) * dil[0] + 1, (kw - 1) * dil[1] + 1), np.float32)
            wide[:, :, ::dil[0], ::dil[1]] = w
            w = wide
        k = w.shape[2:]
        strides = list(a.get("strides", [1] * nsp))
        if nsp == 1:
            strides = [1] + strides
        n = xs[0]
        size = (1, xs[2]) if nsp == 1 else xs[2:]
        full = [(size[d] - 1) * strides[d] + k[d] for d in range(2)]
        os_ = self.shape(out)
        osz = (1, os_[2]) if nsp == 1 else os_[2:]
        pads = list(a.get("pads", [0] * (2 * nsp)))
        begin = [0, pads[0]] if nsp == 1 else [pads[0], pads[1]]
        auto = a.get("auto_pad", "NOTSET")
        if "output_shape" in a or auto in ("SAME_UPPER", "SAME_LOWER"):
            # ONNX derives the pads from the output size: total = full + output_padding - output size
            opad = list(a.get("output_padding", [0] * nsp))
            opad = [0] + opad if nsp == 1 else opad
            total = [full[d] + opad[d] - osz[d] for d in range(2)]
            begin = [t // 2 if auto == "SAME_UPPER" else t - t // 2 for t in total]
            if nsp == 1:
                begin[0] = 0
        elif auto == "VALID":
            begin = [0, 0]
        if any(begin[d] < 0 for d in range(2)):
            raise _Unsupported(f"output_shape {list(osz)} is larger than the transposed convolution's full output "
                               f"{full} plus output_padding")
        # output_padding (or an output_shape past the full output) adds rows / columns at the end that only the
        # bias reaches: TRANSPOSE_CONV's output_shape may exceed the full output by less than the stride
        # (LiteRT's kernel then derives padding 0 and leaves those cells at the bias; it refuses a larger one).
        ext = [max(0, begin[d] + osz[d] - full[d]) for d in range(2)]
        if any(ext[d] >= strides[d] for d in range(2)):
            raise _Unsupported(f"output_padding / output_shape {ext} past the full output, not below the strides "
                               f"{strides} (TFLite's TRANSPOSE_CONV refuses that)")
        full = [full[d] + ext[d] for d in range(2)]
        t = self._to_nhwc(x)
        conv_out = self._tmp("tconv_nhwc", (n, full[0], full[1], cout))
        bias = np.zeros(cout, np.float32) if b is None else np.asarray(b, np.float32)
        opts = {"version": 3, "padding": "VALID", "stride_h": strides[0], "stride_w": strides[1],
                "fused_activation_function": "NONE"}
        if group == 1:
            self._op("TRANSPOSE_CONV", [self._i32("output_shape", [n, full[0], full[1], cout]),
                                        self._f32("weights", w.transpose(1, 2, 3, 0)), t, self._f32("bias", bias)],
                     [conv_out], **opts)
        else:  # groups: a SPLIT of the input channels, one TRANSPOSE_CONV per group, a CONCATENATION
            gin, gout = xs[1] // group, cout // group
            parts = [self._tmp(f"group{g}", self.shape(t)[:3] + (gin,)) for g in range(group)]
            self._op("SPLIT", [self._i32("split_axis", 3), t], parts, num_splits=group)
            outs = []
            for g in range(group):
                o = self._tmp(f"group{g}_tconv", (n, full[0], full[1], gout))
                wg = w[g * gin:(g + 1) * gin].transpose(1, 2, 3, 0)  # [gin, gout, kh, kw] -> [gout, kh, kw, gin]
                self._op("TRANSPOSE_CONV", [self._i32(f"output_shape{g}", [n, full[0], full[1], gout]),
                                            self._f32(f"weights{g}", wg), parts[g],
                                            self._f32(f"bias{g}", bias[g * gout:(g + 1) * gout])], [o], **opts)
                outs.append(o)
            self._op("CONCATENATION", outs, [conv_out], axis=3, fused_activation_function="NONE")
        if tuple(osz) != tuple(full):
            cropped = self._tmp("crop", (n, osz[0], osz[1], cout))
            self._op("STRIDED_SLICE", [conv_out, self._i32("begin", [0, begin[0], begin[1], 0]),
                                       self._i32("end", [n, begin[0] + osz[0], begin[1] + osz[1], cout]),
                                       self._i32("strides", [1, 1, 1, 1])], [cropped])
            conv_out = cropped
        self._from_nhwc(conv_out, out)

    # ------------------------------------------------------------------ pooling
    def _pool(self, node, a, kind):
        x = self.float_input(node)
        xs = self.shape(x)
        if len(node.output) > 1 and node.output[1] and node.output[1] in self.used:
            raise _Unsupported("the Indices output of MaxPool")
        k = a.get("kernel_shape")
        if len(xs) == 5:
            self._pool3d(node, a, kind, x, xs, k)
            return
        sp = self._spatial(node, a, xs, k)
        out = self.out(node)
        os_ = self.shape(out)
        osz = (1, os_[2]) if len(xs) == 3 else os_[2:]
        if any(d != 1 for d in sp.dilations):
            if kind != "max":
                raise _Unsupported("dilated average pooling")
            self._dilated_max_pool(x, xs, sp, osz, out)
            return
        # extra end padding that ceil_mode adds
        extra = [max((osz[d] - 1) * sp.strides[d] + sp.kernel[d] - (sp.size[d] + sum(sp.pads[d])), 0)
                 for d in range(2)]
        include_pad = kind == "avg" and int(a.get("count_include_pad", 0)) == 1
        mode = self._padding_mode(sp)
        if any(extra) or (mode == "SAME" and include_pad):
            mode = "EXPLICIT"
        t = self._to_nhwc(x)
        n, c = xs[0], xs[1]
        opts = {"stride_h": sp.strides[0], "stride_w": sp.strides[1], "filter_height": sp.kernel[0],
                    "filter_width": sp.kernel[1], "fused_activation_function": "NONE"}
        scale = None
        if mode == "EXPLICIT":
            pads = tuple((sp.pads[d][0], sp.pads[d][1] + extra[d]) for d in range(2))
            t = self._pad_nhwc(t, pads, _LOWEST if kind == "max" else 0.0)
            mode = "VALID"
            if kind == "avg":
                counts = np.ones((1,) + tuple(osz) + (1,), np.float64)
                for d in range(2):
                    start = np.arange(osz[d]) * sp.strides[d] - sp.pads[d][0]
                    lo, hi = (-sp.pads[d][0], sp.size[d] + sp.pads[d][1]) if include_pad else (0, sp.size[d])
                    cnt = np.minimum(start + sp.kernel[d], hi) - np.maximum(start, lo)
                    counts = counts * (cnt.reshape(-1, 1) if d == 0 else cnt.reshape(1, -1))[None, :, :, None]
                scale = (sp.kernel[0] * sp.kernel[1] / counts).astype(np.float32)
                if np.all(scale == 1):
                    scale = None
        pooled = self._tmp("pool_nhwc", (n, osz[0], osz[1], c))
        self._op("MAX_POOL_2D" if kind == "max" else "AVERAGE_POOL_2D", [t], [pooled], padding=mode, **opts)
        if scale is not None:
            pooled = self.binary("MUL", pooled, self._f32("count_scale", scale), "count_fix",
                                 fused_activation_function="NONE")
        self._from_nhwc(pooled, out)

    def _dilated_max_pool(self, x, xs, sp, osz, out):
        """Max pooling with dilation. Where each stride is a multiple of its dilation, every window reads
        only every dilation-th row/column from the start: a strided slice, then an undilated max pool
        (any kernel size). Otherwise (small kernels) the maximum of kernel-many strided slices."""
        n, c = xs[0], xs[1]
        dil, st, k = sp.dilations, sp.strides, sp.kernel
        subgrid = all(st[d] % dil[d] == 0 for d in range(2))
        if not subgrid and k[0] * k[1] > 64:
            raise _Unsupported(f"dilated pooling with strides {st} not multiples of dilations {dil} and a "
                               f"{k[0]}x{k[1]} kernel")
        t = self._to_nhwc(x)
        span = [(osz[d] - 1) * st[d] + (k[d] - 1) * dil[d] + 1 for d in range(2)]
        extra = [max(span[d] - (sp.size[d] + sum(sp.pads[d])), 0) for d in range(2)]
        t = self._pad_nhwc(t, tuple((sp.pads[d][0], sp.pads[d][1] + extra[d]) for d in range(2)), _LOWEST)
        if subgrid:
            sub = [(osz[d] - 1) * (st[d] // dil[d]) + k[d] for d in range(2)]
            g = self._tmp("dilation_grid", (n, sub[0], sub[1], c))
            self._op("STRIDED_SLICE", [t, self._i32("begin", [0, 0, 0, 0]),
                                       self._i32("end", [n, (sub[0] - 1) * dil[0] + 1, (sub[1] - 1) * dil[1] + 1, c]),
                                       self._i32("strides", [1, dil[0], dil[1], 1])], [g])
            pooled = self._tmp("pool_nhwc", (n, osz[0], osz[1], c))
            self._op("MAX_POOL_2D", [g], [pooled], padding="VALID", stride_h=st[0] // dil[0],
                     stride_w=st[1] // dil[1], filter_height=k[0], filter_width=k[1], fused_activation_function="NONE")
            self._from_nhwc(pooled, out)
            return
        acc = None
        for i in range(k[0]):
            for j in range(k[1]):
                h0, w0 = i * dil[0], j * dil[1]
                sl = self._tmp("tap", (n, osz[0], osz[1], c))
                self._op("STRIDED_SLICE", [t, self._i32("begin", [0, h0, w0, 0]),
                                           self._i32("end", [n, h0 + (osz[0] - 1) * st[0] + 1,
                                                             w0 + (osz[1] - 1) * st[1] + 1, c]),
                                           self._i32("strides", [1, st[0], st[1], 1])], [sl])
                acc = sl if acc is None else self.binary("MAXIMUM", acc, sl, "tap_max")
        self._from_nhwc(acc, out)

    def _pool3d(self, node, a, kind, x, xs, kernel):
        """3-D max / average pooling, separable: a 2-D pool over (H, W) of every depth slice, then a pool over
        D (the maximum and the window sum of a box factor over its axes; the average's divisor is fixed by
        the product of the per-axis counts where padding is not counted)."""
        if any(d != 1 for d in a.get("dilations", [1, 1, 1])):
            raise _Unsupported("dilated 3-D pooling")
        if a.get("auto_pad", "NOTSET") not in ("NOTSET", "VALID"):
            raise _Unsupported(f"auto_pad {a.get('auto_pad')} on 3-D pooling")
        kernel = [int(v) for v in kernel]
        strides = [int(v) for v in a.get("strides", [1, 1, 1])]
        pads = [0] * 6 if a.get("auto_pad", "NOTSET") == "VALID" else [int(v) for v in a.get("pads", [0] * 6)]
        n, c, size = xs[0], xs[1], list(xs[2:])
        out = self.out(node)
        osz = list(self.shape(out)[2:])
        span = [(osz[d] - 1) * strides[d] + kernel[d] for d in range(3)]
        pp = [(pads[d], max(pads[d + 3], span[d] - size[d] - pads[d])) for d in range(3)]
        include_pad = kind == "avg" and int(a.get("count_include_pad", 0)) == 1
        t = self.transpose(x, [0, 2, 3, 4, 1], "to_ndhwc")
        fill = _LOWEST if kind == "max" else 0.0
        paddings = self._i32("paddings", [[0, 0]] + [list(p) for p in pp] + [[0, 0]])
        if any(any(p) for p in pp):
            padded = self._tmp("pad", (n, *(size[d] + sum(pp[d]) for d in range(3)), c))
            if fill == 0.0:
                self._op("PAD", [t, paddings], [padded])
            else:
                self._op("PADV2", [t, paddings, self._f32("pad_value", [fill])], [padded])
            t = padded
        dp, hp, wp = self.shape(t)[1:4]
        op = "MAX_POOL_2D" if kind == "max" else "AVERAGE_POOL_2D"
        t = self.reshape(t, (n * dp, hp, wp, c), "depth_slices")
        hw = self._tmp("pool_hw", (n * dp, osz[1], osz[2], c))
        self._op(op, [t], [hw], padding="VALID", stride_h=strides[1], stride_w=strides[2], filter_height=kernel[1],
                 filter_width=kernel[2], fused_activation_function="NONE")
        t = self.reshape(hw, (n, dp, osz[1] * osz[2], c), "depth_rows")
        dd = self._tmp("pool_d", (n, osz[0], osz[1] * osz[2], c))
        self._op(op, [t], [dd], padding="VALID", stride_h=strides[0], stride_w=1, filter_height=kernel[0],
                 filter_width=1, fused_activation_function="NONE")
        t = self.reshape(dd, (n, osz[0], osz[1], osz[2], c), "ndhwc")
        if kind == "avg":
            counts = np.ones(tuple(osz), np.float64)
            for d in range(3):
                start = np.arange(osz[d]) * strides[d] - pp[d][0]
                lo, hi = (-pads[d], size[d] + pads[d + 3]) if include_pad else (0, size[d])
                cnt = np.minimum(start + kernel[d], hi) - np.maximum(start, lo)
                shape = [1, 1, 1]
                shape[d] = -1
                counts = counts * cnt.reshape(shape)
            scale = (np.prod(kernel) / counts).astype(np.float32)
            if not np.all(scale == 1):
                t = self.binary("MUL", t, self._f32("count_scale", scale.reshape(1, *osz, 1)), "count_fix",
                                fused_activation_function="NONE")
        self.transpose(t, [0, 4, 1, 2, 3], "to_ncdhw", out=out)

    def _op_MaxPool(self, node, a):
        if int(a.get("storage_order", 0)) != 0 and len(node.output) > 1:
            raise _Unsupported("storage_order with Indices")
        self._pool(node, a, "max")

    def _op_AveragePool(self, node, a):
        self._pool(node, a, "avg")

    def _op_LpPool(self, node, a):
        """(sum over each window of |x|^p)^(1/p), p = 1 or 2: the AveragePool (padding counted, as ONNX's zeros
        are) of |x| or x^2, times the window's size, then SQRT for p = 2."""
        from onnx import helper

        p = int(a.get("p", 2))
        if p not in (1, 2):
            raise _Unsupported(f"p={p} (1 and 2 are supported)")
        x = self.float_input(node)
        powered = self.unary("ABS", x, "abs") if p == 1 else self.binary("MUL", x, x, "square",
                                                                          fused_activation_function="NONE")
        src, mean = f"{node.output[0]}/lp_input", f"{node.output[0]}/lp_mean"
        self.values[src], self.shapes[src], self.types[src] = powered, self.shape(powered), 1
        self.shapes[mean], self.types[mean] = self.shapes[node.output[0]], 1
        keep = {k: v for k, v in a.items() if k != "p"}
        avg = helper.make_node("AveragePool", [src], [mean], count_include_pad=1, **keep)
        self._pool(avg, _attrs(avg), "avg")
        area = float(np.prod(a["kernel_shape"]))
        out = self.out(node)
        total = self.binary("MUL", self.values[mean], self._f32("window_size", area), "window_sum",
                            out=out if p == 1 else None, fused_activation_function="NONE")
        if p == 2:
            self.unary("SQRT", total, "root", out=out)

    def _op_GlobalAveragePool(self, node, a):
        x = self.float_input(node)
        rank = len(self.shape(x))
        self._op("MEAN", [x, self._i32("axes", list(range(2, rank)))], [self.out(node)], keep_dims=True)

    def _op_GlobalMaxPool(self, node, a):
        x = self.float_input(node)
        rank = len(self.shape(x))
        self._op("REDUCE_MAX", [x, self._i32("axes", list(range(2, rank)))], [self.out(node)], keep_dims=True)

    # ------------------------------------------------------------------ matrix products
    def _op_Gemm(self, node, a):
        x = self.float_input(node)
        alpha, beta = float(a.get("alpha", 1.0)), float(a.get("beta", 1.0))
        if int(a.get("transA", 0)):
            x = self.transpose(x, [1, 0], "transA")
        out = self.out(node)
        m, n_out = self.shape(out)
        bconst = self.const(node.input[1])
        c_name = node.input[2] if len(node.input) > 2 and node.input[2] else None
        cconst = self.const(c_name) if c_name else None
        bias = -1
        add_after = None
        if c_name is not None:
            if cconst is not None and cconst.size in (1, n_out) and (cconst.ndim < 2 or cconst.shape[0] == 1):
                bias = self._f32("bias", np.broadcast_to(np.asarray(cconst, np.float32).reshape(-1) * beta, (n_out,)))
            elif cconst is not None:
                add_after = self._f32("c", np.asarray(cconst, np.float32) * beta)
            else:
                add_after = self.value(c_name)
                if beta != 1.0:
                    add_after = self.binary("MUL", add_after, self._f32("beta", beta), "beta_c",
                                            fused_activation_function="NONE")
        target = out if add_after is None else self._tmp("matmul", (m, n_out))
        if bconst is not None:
            w = np.asarray(bconst, np.float32)
            w = (w if int(a.get("transB", 0)) else w.T) * np.float32(alpha)
            self._op("FULLY_CONNECTED", [x, self._f32("weights", w), bias], [target],
                     fused_activation_function="NONE", keep_num_dims=False)
        else:
            prod = target if alpha == 1.0 and bias == -1 else self._tmp("bmm", (m, n_out))
            self._op("BATCH_MATMUL", [x, self.value(node.input[1])], [prod], adj_x=False,
                     adj_y=bool(a.get("transB", 0)))
            if alpha != 1.0:
                nxt = target if bias == -1 else self._tmp("alpha", (m, n_out))
                self.binary("MUL", prod, self._f32("alpha", alpha), "alpha", out=nxt, fused_activation_function="NONE")
                prod = nxt
            if bias != -1:
                self.binary("ADD", prod, bias, "bias", out=target, fused_activation_function="NONE")
        if add_after is not None:
            self.binary("ADD", target, add_after, "add_c", out=out, fused_activation_function="NONE")

    def _op_MatMul(self, node, a):
        x = self.float_input(node)
        xs = self.shape(x)
        out = self.out(node)
        wconst = self.const(node.input[1])
        if wconst is not None and wconst.ndim == 2 and len(xs) >= 1:
            w = np.asarray(wconst, np.float32).T
            if len(xs) == 1:
                x = self.reshape(x, (1, xs[0]), "row")
                tmp = self._tmp("fc", (1, w.shape[0]))
                self._op("FULLY_CONNECTED", [x, self._f32("weights", w), -1], [tmp],
                         fused_activation_function="NONE", keep_num_dims=False)
                self.reshape(tmp, self.shape(out), out=out)
                return
            self._op("FULLY_CONNECTED", [x, self._f32("weights", w), -1], [out],
                     fused_activation_function="NONE", keep_num_dims=len(xs) > 2)
            return
        y = self.value(node.input[1])
        ys = self.shape(y)
        if len(xs) < 2 or len(ys) < 2:
            raise _Unsupported("MatMul with a 1-D run-time operand")
        rank = max(len(xs), len(ys))
        if len(xs) < rank:
            x = self.reshape(x, (1,) * (rank - len(xs)) + xs, "lhs_rank")
        if len(ys) < rank:
            y = self.reshape(y, (1,) * (rank - len(ys)) + ys, "rhs_rank")
        self._op("BATCH_MATMUL", [x, y], [out], adj_x=False, adj_y=False)

    def _op_Einsum(self, node, a):
        """One or two operands, explicit or implicit output, no ellipsis / repeated index within an operand:
        indices found only in one operand and not in the output are summed first; then the product is a
        BATCH_MATMUL of [batch, left, contracted] by [batch, contracted, right] (transposes and reshapes
        around it), the result reshaped and transposed to the output's order."""
        eq = str(a["equation"]).replace(" ", "")
        lhs, _, rhs = eq.partition("->")
        terms = lhs.split(",")
        if len(terms) != len(node.input) or len(terms) not in (1, 2):
            raise _Unsupported(f"Einsum of {len(node.input)} operands (1 or 2 are supported)")
        ellipsis = ""
        if "..." in eq:  # '...' stands for the leading dims each operand has beyond its letters, aligned right
            spare = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ" if c not in eq]
            ranks = [len(self.shape(self.value(i))) for i in node.input]
            widths = [r - len(t.replace("...", "")) if "..." in t else 0 for t, r in zip(terms, ranks)]
            if min(widths) < 0:
                raise _Unsupported(f"Einsum '{eq}' for operands of rank {ranks}")
            ellipsis = "".join(spare[:max(widths)])
            terms = [t.replace("...", ellipsis[len(ellipsis) - w:]) for t, w in zip(terms, widths)]
            lhs = ",".join(terms)
            rhs = rhs.replace("...", ellipsis)
        if "." in lhs + rhs:
            raise _Unsupported(f"Einsum equation '{eq}'")
        if not _:
            counts = {c: lhs.count(c) for c in lhs if c != ","}
            rhs = ellipsis + "".join(sorted(c for c, n in counts.items() if n == 1 and c not in ellipsis))
        if any(len(set(t)) != len(t) for t in terms) or len(set(rhs)) != len(rhs):
            raise _Unsupported("Einsum with a repeated index in one operand (diagonals)")
        xs = [self.float_input(node, i) for i in range(len(terms))]
        sizes = {}
        for t, x in zip(terms, xs):
            shape = self.shape(x)
            if len(shape) != len(t):
                raise _Unsupported(f"Einsum term '{t}' for a rank-{len(shape)} operand")
            for c, d in zip(t, shape):
                if sizes.setdefault(c, d) != d:
                    raise _Unsupported(f"Einsum index '{c}' with sizes {sizes[c]} and {d} (no broadcasting)")
        out = self.out(node)

        def reduce_only(x, t, keep):
            drop = [k for k, c in enumerate(t) if c not in keep]
            if not drop:
                return x, t
            shape = tuple(d for k, d in enumerate(self.shape(x)) if k not in drop)
            y = self._tmp("einsum_sum", shape)
            self._op("SUM", [x, self._i32("axes", drop)], [y], keep_dims=False)
            return y, "".join(c for k, c in enumerate(t) if k not in drop)

        def arrange(x, t, order, suffix, final=None):
            perm = [t.index(c) for c in order]
            if perm != list(range(len(perm))):
                return self.transpose(x, perm, suffix, out=final)
            if final is not None:
                self.reshape(x, self.shape(final), out=final)
                return final
            return x

        if len(terms) == 1:
            x, t = reduce_only(xs[0], terms[0], set(rhs))
            arrange(x, t, rhs, "einsum_out", final=out)
            return
        (x, ta), (y, tb) = (reduce_only(xs[0], terms[0], set(rhs) | set(terms[1])),
                            reduce_only(xs[1], terms[1], set(rhs) | set(terms[0])))
        batch = [c for c in ta if c in tb and c in rhs]
        contract = [c for c in ta if c in tb and c not in rhs]
        left = [c for c in ta if c not in tb]
        right = [c for c in tb if c not in ta]

        def size(cs):
            return int(np.prod([sizes[c] for c in cs], dtype=np.int64)) if cs else 1

        bsz, lsz, ksz, rsz = size(batch), size(left), size(contract), size(right)
        x = arrange(x, ta, batch + left + contract, "einsum_lhs")
        x = self.reshape(x, (bsz, lsz, ksz), "einsum_lhs3")
        y = arrange(y, tb, batch + contract + right, "einsum_rhs")
        y = self.reshape(y, (bsz, ksz, rsz), "einsum_rhs3")
        prod_ = self._tmp("einsum_matmul", (bsz, lsz, rsz))
        self._op("BATCH_MATMUL", [x, y], [prod_], adj_x=False, adj_y=False)
        order = batch + left + right
        full = self.reshape(prod_, tuple(sizes[c] for c in order) or (1,), "einsum_full")
        if not order:
            self.reshape(full, self.shape(out), out=out)
            return
        arrange(full, "".join(order), rhs, "einsum_out", final=out)

    # ------------------------------------------------------------------ element-wise
    def _binary_node(self, node, a, op):
        a_, b_ = self.value(node.input[0]), self.value(node.input[1])
        if self.ttype(a_) != self.ttype(b_):
            raise _Unsupported(f"operand types differ ({self.ttype(a_)}, {self.ttype(b_)})")
        if len(self.shape(self.out(node))) > 6:
            raise _Unsupported("broadcasting beyond rank 6")
        out = self.values[node.output[0]]
        extra = {"fused_activation_function": "NONE"} if op_table.row(op).fused_activation else {}
        self._op(op, [a_, b_], [out], **extra)

    def _variadic(self, node, a, op):
        ins = [self.value(i) for i in node.input if i]
        out = self.out(node)
        if len(ins) == 1:
            self.reshape(ins[0], self.shape(out), out=out)
            return
        acc = ins[0]
        extra = {"fused_activation_function": "NONE"} if op_table.row(op).fused_activation else {}
        for k, t in enumerate(ins[1:]):
            acc = self.binary(op, acc, t, f"{op.lower()}{k}", out=out if k == len(ins) - 2 else None, **extra)

    def _op_Pow(self, node, a):
        x = self.float_input(node)
        e = self.const(node.input[1])
        out = self.out(node)
        if e is not None and e.size >= 1 and np.all(e == e.reshape(-1)[0]) and \
                np.broadcast_shapes(self.shape(x), e.shape) == self.shape(x):
            v = float(e.reshape(-1)[0])
            if v == 1.0:
                self.reshape(x, self.shape(out), out=out)
                return
            if v == 2.0:
                self.binary("MUL", x, x, "square", out=out, fused_activation_function="NONE")
                return
            if v == 3.0:
                sq = self.binary("MUL", x, x, "square", fused_activation_function="NONE")
                self.binary("MUL", sq, x, "cube", out=out, fused_activation_function="NONE")
                return
            if v == 0.5:
                self.unary("SQRT", x, "sqrt", out=out)
                return
            if v == -0.5:
                self.unary("RSQRT", x, "rsqrt", out=out)
                return
            if v == -1.0:
                self.binary("DIV", self._f32("one", 1.0), x, "reciprocal", out=out, fused_activation_function="NONE")
                return
        y = self.value(node.input[1])
        if self.ttype(y) != "FLOAT32":
            raise _Unsupported(f"exponent of type {self.ttype(y)}")
        self._op("POW", [x, y], [out])

    def _unary_node(self, node, a, op, **options):
        self._op(op, [self.float_input(node)], [self.out(node)], **options)

    def _op_Abs(self, node, a):
        self._op("ABS", [self.value(node.input[0])], [self.out(node)])

    def _op_Neg(self, node, a):
        self._op("NEG", [self.value(node.input[0])], [self.out(node)])

    def _op_LeakyRelu(self, node, a):
        self._unary_node(node, a, "LEAKY_RELU", alpha=float(a.get("alpha", 0.01)))

    def _op_Clip(self, node, a):
        x = self.float_input(node)
        lo, hi = a.get("min"), a.get("max")
        bounds = [i for i in node.input[1:3] if i]
        if any(self.const(i) is None for i in bounds):  # a bound computed at run time: MAXIMUM / MINIMUM with it
            out, t = self.out(node), x
            for k, (i, op) in enumerate(zip(node.input[1:3], ("MAXIMUM", "MINIMUM"))):
                if i:
                    last = k == 1 or not (len(node.input) > 2 and node.input[2])
                    t = self.binary(op, t, self.float_input(node, k + 1), op.lower(), out=out if last else None)
            return
        if len(node.input) > 1 and node.input[1]:
            lo = float(self.need_const(node.input[1], "min"))
        if len(node.input) > 2 and node.input[2]:
            hi = float(self.need_const(node.input[2], "max"))
        out = self.out(node)
        lo = -math.inf if lo is None else float(lo)
        hi = math.inf if hi is None else float(hi)
        if (lo, hi) == (0.0, 6.0):
            self.unary("RELU6", x, "relu6", out=out)
        elif (lo, hi) == (-1.0, 1.0):
            self.unary("RELU_N1_TO_1", x, "relu_n1_to_1", out=out)
        elif (lo, hi) == (0.0, math.inf):
            self.unary("RELU", x, "relu", out=out)
        elif lo == -math.inf and hi == math.inf:
            self.reshape(x, self.shape(out), out=out)
        elif lo == -math.inf:
            self.binary("MINIMUM", x, self._f32("max", hi), "min", out=out)
        elif hi == math.inf:
            self.binary("MAXIMUM", x, self._f32("min", lo), "max", out=out)
        else:
            t = self.binary("MAXIMUM", x, self._f32("min", lo), "max")
            self.binary("MINIMUM", t, self._f32("max", hi), "min", out=out)

    def _op_PRelu(self, node, a):
        x = self.float_input(node)
        slope = self.const(node.input[1])
        out = self.out(node)
        if slope is None:
            raise _Unsupported("slope must be a constant")
        xs = self.shape(x)
        slope = np.asarray(slope, np.float32)
        if slope.ndim == 1 and slope.size > 1 and len(xs) >= 2 and slope.size == xs[1] and (
                self.opset < 7 or not _broadcasts(slope.shape, xs)):
            slope = slope.reshape((-1,) + (1,) * (len(xs) - 2))  # a per-channel slope (PyTorch's nn.PReLU(C))
        if slope.ndim > len(xs) or not _broadcasts(slope.shape, xs):
            raise _Unsupported(f"slope {slope.shape} does not broadcast to {xs}")
        if slope.size == 1:
            self._op("LEAKY_RELU", [x], [out], alpha=float(slope.reshape(-1)[0]))
            return
        if len(xs) > 4:  # TFLite's PRELU stops at rank 4: max(x, 0) + slope * min(x, 0)
            pos = self.binary("MAXIMUM", x, self._f32("zero", 0.0), "pos")
            neg = self.binary("MUL", self.binary("MINIMUM", x, self._f32("zero", 0.0), "neg"),
                              self._f32("slope", slope), "neg_part", fused_activation_function="NONE")
            self.binary("ADD", pos, neg, "prelu", out=out, fused_activation_function="NONE")
            return
        self._op("PRELU", [x, self._f32("slope", slope)], [out])

    def _op_Elu(self, node, a):
        x = self.float_input(node)
        alpha = float(a.get("alpha", 1.0))
        out = self.out(node)
        neg = self.binary("MINIMUM", x, self._f32("zero", 0.0), "neg")
        e = self.unary("EXP", neg, "exp")
        em1 = self.binary("SUB", e, self._f32("one", 1.0), "expm1", fused_activation_function="NONE")
        if alpha != 1.0:
            em1 = self.binary("MUL", em1, self._f32("alpha", alpha), "scaled", fused_activation_function="NONE")
        pos = self.unary("RELU", x, "pos")
        self.binary("ADD", pos, em1, "sum", out=out, fused_activation_function="NONE")

    def _op_Selu(self, node, a):
        x = self.float_input(node)
        alpha = float(a.get("alpha", 1.67326319217681884765625))
        gamma = float(a.get("gamma", 1.05070102214813232421875))
        out = self.out(node)
        neg = self.binary("MINIMUM", x, self._f32("zero", 0.0), "neg")
        e = self.unary("EXP", neg, "exp")
        em1 = self.binary("SUB", e, self._f32("one", 1.0), "expm1", fused_activation_function="NONE")
        em1 = self.binary("MUL", em1, self._f32("alpha_gamma", alpha * gamma), "neg_part",
                          fused_activation_function="NONE")
        pos = self.binary("MUL", self.unary("RELU", x, "pos"), self._f32("gamma", gamma), "pos_part",
                          fused_activation_function="NONE")
        self.binary("ADD", pos, em1, "selu", out=out, fused_activation_function="NONE")

    def _op_Softplus(self, node, a):
        self._softplus(self.float_input(node), self.out(node))

    def _op_Mean(self, node, a):
        ins = [i for i in node.input if i]
        if len(ins) == 1:
            self._variadic(node, a, "ADD")
            return
        out = self.out(node)
        acc = self.value(ins[0])
        for k, name in enumerate(ins[1:]):
            acc = self.binary("ADD", acc, self.value(name), f"sum{k}", fused_activation_function="NONE")
        self.binary("MUL", acc, self._f32("inv_count", 1.0 / len(ins)), "mean", out=out,
                    fused_activation_function="NONE")

    def _op_HardSigmoid(self, node, a):
        x = self.float_input(node)
        alpha, beta = float(a.get("alpha", 0.2)), float(a.get("beta", 0.5))
        out = self.out(node)
        t = self.binary("MUL", x, self._f32("alpha", alpha), "scaled", fused_activation_function="NONE")
        t = self.binary("ADD", t, self._f32("beta", beta), "shifted", fused_activation_function="NONE")
        t = self.binary("MAXIMUM", t, self._f32("zero", 0.0), "lower")
        self.binary("MINIMUM", t, self._f32("one", 1.0), "upper", out=out)

    def _erf(self, x: int, out: int | None = None) -> int:
        xc = self.binary("MINIMUM", x, self._f32("erf_hi", 4.0), "erf_clamp_hi")
        xc = self.binary("MAXIMUM", xc, self._f32("erf_lo", -4.0), "erf_clamp")
        x2 = self.binary("MUL", xc, xc, "erf_x2", fused_activation_function="NONE")

        def poly(coeffs, tag):
            acc = self.binary("MUL", x2, self._f32(f"{tag}0", coeffs[0]), f"{tag}_m0", fused_activation_function="NONE")
            for k, c in enumerate(coeffs[1:], 1):
                acc = self.binary("ADD", acc, self._f32(f"{tag}{k}", c), f"{tag}_a{k}", fused_activation_function="NONE")
                if k < len(coeffs) - 1:
                    acc = self.binary("MUL", acc, x2, f"{tag}_m{k}", fused_activation_function="NONE")
            return acc

        p = poly(_ERF_P, "erf_p")
        q = poly(_ERF_Q, "erf_q")
        xp = self.binary("MUL", xc, p, "erf_xp", fused_activation_function="NONE")
        return self.binary("DIV", xp, q, "erf", out=out, fused_activation_function="NONE")

    def _op_Erf(self, node, a):
        self._erf(self.float_input(node), self.out(node))

    def _op_Gelu(self, node, a):
        x = self.float_input(node)
        out = self.out(node)
        if a.get("approximate", "none") == "tanh":
            x3 = self.binary("MUL", self.binary("MUL", x, x, "x2", fused_activation_function="NONE"), x, "x3",
                             fused_activation_function="NONE")
            inner = self.binary("MUL", x3, self._f32("c", 0.044715), "cx3", fused_activation_function="NONE")
            inner = self.binary("ADD", x, inner, "poly", fused_activation_function="NONE")
            inner = self.binary("MUL", inner, self._f32("k", math.sqrt(2 / math.pi)), "arg",
                                fused_activation_function="NONE")
            t = self.unary("TANH", inner, "tanh")
        else:
            t = self._erf(self.binary("MUL", x, self._f32("rsqrt2", 1 / math.sqrt(2)), "scaled",
                                      fused_activation_function="NONE"))
        t = self.binary("ADD", t, self._f32("one", 1.0), "one_plus", fused_activation_function="NONE")
        half_x = self.binary("MUL", x, self._f32("half", 0.5), "half_x", fused_activation_function="NONE")
        self.binary("MUL", half_x, t, "gelu", out=out, fused_activation_function="NONE")

    # ------------------------------------------------------------------ softmax
    def _softmax(self, node, a, op):
        x = self.float_input(node)
        xs = self.shape(x)
        rank = len(xs)
        out = self.out(node)
        opts = {"beta": 1.0} if op == "SOFTMAX" else {}
        if self.opset >= 13:
            axis = self.axes([a.get("axis", -1)], rank)[0]
            if axis == rank - 1:
                self._op(op, [x], [out], **opts)
                return
            perm = list(range(rank))
            perm[axis], perm[-1] = perm[-1], perm[axis]
            t = self.transpose(x, perm, "axis_last")
            s = self._tmp("softmax", self.shape(t))
            self._op(op, [t], [s], **opts)
            self.transpose(s, perm, "axis_back", out=out)
            return
        axis = self.axes([a.get("axis", 1)], rank)[0]
        if axis == rank - 1:
            self._op(op, [x], [out], **opts)
            return
        flat = (int(np.prod(xs[:axis])), int(np.prod(xs[axis:])))
        t = self.reshape(x, flat, "flat")
        s = self._tmp("softmax", flat)
        self._op(op, [t], [s], **opts)
        self.reshape(s, xs, out=out)

    # ------------------------------------------------------------------ normalization
    def _normalize(self, x: int, axes: list[int], eps: float, scale: int | None, bias: int | None, out: int):
        xs = self.shape(x)
        red = tuple(1 if i in axes else d for i, d in enumerate(xs))
        mean = self._tmp("mean", red)
        self._op("MEAN", [x, self._i32("axes", axes)], [mean], keep_dims=True)
        sq = self.binary("SQUARED_DIFFERENCE", x, mean, "sqdiff")
        var = self._tmp("var", red)
        self._op("MEAN", [sq, self._i32("axes2", axes)], [var], keep_dims=True)
        var_eps = self.binary("ADD", var, self._f32("eps", eps), "var_eps", fused_activation_function="NONE")
        rstd = self.unary("RSQRT", var_eps, "rstd")
        centered = self.binary("SUB", x, mean, "centered", fused_activation_function="NONE")
        y = self.binary("MUL", centered, rstd, "normalized", out=out if scale is None and bias is None else None,
                        fused_activation_function="NONE")
        if scale is not None:
            y = self.binary("MUL", y, scale, "scaled", out=out if bias is None else None,
                            fused_activation_function="NONE")
        if bias is not None:
            self.binary("ADD", y, bias, "shifted", out=out, fused_activation_function="NONE")

    def _op_LayerNormalization(self, node, a):
        x = self.float_input(node)
        for o in node.output[1:]:
            if o and o in self.used:
                raise _Unsupported("the Mean / InvStdDev outputs")
        rank = len(self.shape(x))
        axis = self.axes([a.get("axis", -1)], rank)[0]
        scale = self.value(node.input[1])
        bias = self.value(node.input[2]) if len(node.input) > 2 and node.input[2] else None
        self._normalize(x, list(range(axis, rank)), float(a.get("epsilon", 1e-5)), scale, bias, self.out(node))

    def _channel_const(self, suffix, v, rank):
        v = np.asarray(v, np.float32).reshape(-1)
        return self._f32(suffix, v.reshape((-1,) + (1,) * (rank - 2)))

    def _op_InstanceNormalization(self, node, a):
        x = self.float_input(node)
        rank = len(self.shape(x))
        if rank < 3:
            raise _Unsupported("input of rank below 3")
        scale = self._channel_const("scale", self.need_const(node.input[1], "scale"), rank)
        bias = self._channel_const("bias", self.need_const(node.input[2], "bias"), rank)
        self._normalize(x, list(range(2, rank)), float(a.get("epsilon", 1e-5)), scale, bias, self.out(node))

    def _op_BatchNormalization(self, node, a):
        x = self.float_input(node)
        for o in node.output[1:]:
            if o and o in self.used:
                raise _Unsupported("training-mode outputs (running mean / variance)")
        if int(a.get("training_mode", 0)):
            raise _Unsupported("training_mode=1")
        gamma, beta, mean, var = (np.asarray(self.need_const(node.input[i], n), np.float64)
                                  for i, n in ((1, "scale"), (2, "bias"), (3, "mean"), (4, "var")))
        eps = float(a.get("epsilon", 1e-5))
        mul = gamma / np.sqrt(var + eps)
        add = beta - mean * mul
        rank = len(self.shape(x))
        t = self.binary("MUL", x, self._channel_const("mul", mul, max(rank, 2)), "bn_mul",
                        fused_activation_function="NONE")
        self.binary("ADD", t, self._channel_const("add", add, max(rank, 2)), "bn_add", out=self.out(node),
                    fused_activation_function="NONE")

    # ------------------------------------------------------------------ reductions
    def _reduce(self, node, a, op, x=None, out=None):
        x = self.float_input(node) if x is None else x
        rank = len(self.shape(x))
        axes = a.get("axes")
        if len(node.input) > 1 and node.input[1]:
            axes = self.need_const(node.input[1], "axes").reshape(-1).tolist()
        out = self.out(node) if out is None else out
        if not axes:
            if int(a.get("noop_with_empty_axes", 0)):
                self.reshape(x, self.shape(out), out=out)
                return
            axes = list(range(rank))
        axes = sorted(set(self.axes(axes, rank)))
        self._op(op, [x, self._i32("axes", axes)], [out], keep_dims=bool(a.get("keepdims", 1)))

    def _reduced_tmp(self, node, suffix):
        return self._tmp(suffix, self.shape(self.out(node)))

    def _op_ReduceMin(self, node, a):  # min(x) = -max(-x)
        neg = self.unary("NEG", self.float_input(node), "neg")
        m = self._reduced_tmp(node, "max_of_neg")
        self._reduce(node, a, "REDUCE_MAX", x=neg, out=m)
        self.unary("NEG", m, "min", out=self.out(node))

    def _op_ReduceL2(self, node, a):  # sqrt(sum(x^2))
        x = self.float_input(node)
        sq = self.binary("MUL", x, x, "square", fused_activation_function="NONE")
        s_ = self._reduced_tmp(node, "sum_sq")
        self._reduce(node, a, "SUM", x=sq, out=s_)
        self.unary("SQRT", s_, "l2", out=self.out(node))

    def _op_ReduceSumSquare(self, node, a):
        x = self.float_input(node)
        sq = self.binary("MUL", x, x, "square", fused_activation_function="NONE")
        self._reduce(node, a, "SUM", x=sq)

    def _op_LRN(self, node, a):
        """x / (bias + alpha / size * sum of x^2 over a window of ``size`` channels) ^ beta: the window
        sum is an average pool over the channel axis (laid out as a spatial one) times its size."""
        x = self.float_input(node)
        xs = self.shape(x)
        size = int(a["size"])
        alpha, beta, bias = float(a.get("alpha", 1e-4)), float(a.get("beta", 0.75)), float(a.get("bias", 1.0))
        n, c = xs[0], xs[1]
        rest = int(np.prod(xs[2:], dtype=np.int64)) if len(xs) > 2 else 1
        out = self.out(node)
        sq = self.binary("MUL", x, x, "square", fused_activation_function="NONE")
        t = self.reshape(sq, (n, c, rest, 1), "channels_as_rows")
        lo, hi = (size - 1) // 2, size // 2
        t = self._pad_nhwc(t, ((lo, hi), (0, 0)), 0.0)
        pooled = self._tmp("window_mean", (n, c, rest, 1))
        self._op("AVERAGE_POOL_2D", [t], [pooled], padding="VALID", stride_h=1, stride_w=1, filter_height=size,
                 filter_width=1, fused_activation_function="NONE")
        pooled = self.reshape(pooled, xs, "window_mean_nchw")
        # bias + alpha / size * (size * mean) = bias + alpha * mean
        d = self.binary("MUL", pooled, self._f32("alpha", alpha), "scaled", fused_activation_function="NONE")
        d = self.binary("ADD", d, self._f32("bias", bias), "biased", fused_activation_function="NONE")
        if beta == 0.5:
            r = self.unary("RSQRT", d, "rsqrt")
            self.binary("MUL", x, r, "lrn", out=out, fused_activation_function="NONE")
            return
        d = self.binary("POW", d, self._f32("beta", beta), "powered")
        self.binary("DIV", x, d, "lrn", out=out, fused_activation_function="NONE")

    # ------------------------------------------------------------------ top-k and non-max suppression
    def _op_TopK(self, node, a):
        """TOPK_V2 over the last axis (another axis: a TRANSPOSE swapping it with the last, and back), sorted
        descending with equal values in index order (ONNX's and LiteRT's rule); largest=0 as the top k of the
        negated input, negated back (exact in float32); int32 indices CAST to ONNX's int64."""
        x = self.value(node.input[0])
        xt = self.ttype(x)
        if xt not in ("FLOAT32", "INT8", "UINT8", "INT16", "INT32", "INT64"):
            raise _Unsupported(f"input type {xt} (TOPK_V2 runs FLOAT32, INT8, UINT8, INT16, INT32, INT64)")
        if self.opset < 10:
            k = int(a.get("k", 0))
        else:
            kv = np.asarray(self.need_const(node.input[1], "K")).reshape(-1)
            if kv.size != 1:
                raise _Unsupported(f"K holds {kv.size} values, not one")
            k = int(kv[0])
        xs = self.shape(x)
        axis = self.axes([a.get("axis", -1)], len(xs))[0]
        if not 0 <= k <= xs[axis]:
            raise _Unsupported(f"K = {k} is not within 0..{xs[axis]} (the size of axis {axis})")
        largest = int(a.get("largest", 1))
        if not largest and xt != "FLOAT32":
            raise _Unsupported(f"largest=0 (the k smallest) on a {xt} input: taken as the top k of the negated "
                               "input, which is exact only in float (the type's lowest value has no negation)")
        last = len(xs) - 1
        perm = list(range(len(xs)))
        perm[axis], perm[last] = last, axis
        t = x
        if axis != last:
            t = self.transpose(t, perm, "to_last")
        if not largest:
            t = self.unary("NEG", t, "negate")
        rows = self.shape(t)[:-1] + (k,)
        out_v = self.out(node, 0, type=xt)
        direct = axis == last
        values = out_v if direct and largest else self._tmp("values", rows, xt)
        index32 = self._tmp("indices", rows, "INT32")
        self._op("TOPK_V2", [t, self._const("k", np.array(k, np.int32), "INT32")], [values, index32])
        if not largest:
            values = self.unary("NEG", values, "negate_back", out=out_v if direct else None)
        if not direct:
            self.transpose(values, perm, "values_back", out=out_v)
        if len(node.output) > 1 and node.output[1]:
            out_i = self.out(node, 1, type="INT64")
            wide = out_i if direct else self._tmp("indices64", rows, "INT64")
            self._op("CAST", [index32], [wide], in_data_type="INT32", out_data_type="INT64")
            if not direct:
                self.transpose(wide, perm, "indices_back", out=out_i)

    def _op_NonMaxSuppression(self, node, a):
        """One batch, one class: NON_MAX_SUPPRESSION_V4 on boxes [N, 4] (center_point_box=1 converted to corners
        first) and scores [N]. ONNX's result [num_selected, 3] (batch, class, box) has a data-dependent size; a
        TFLite graph's shapes are static, so it becomes min(max_output_boxes_per_class, N) rows, those past the
        selected count -1 (said in the import notes), and only as a graph output (refused when other nodes read
        it). ONNX suppresses at IoU > iou_threshold, TFLite at >=: the threshold passed is the next float32 up."""
        if len(node.input) < 2 or not node.input[1]:
            raise _Unsupported(f"needs boxes and scores inputs, has {len(node.input)} input(s)")
        boxes, scores = self.float_input(node, 0), self.float_input(node, 1)
        bs, ss = self.shape(boxes), self.shape(scores)
        if len(bs) != 3 or bs[2] != 4 or len(ss) != 3 or ss[2] != bs[1] or ss[0] != bs[0]:
            raise _Unsupported(f"boxes {bs} / scores {ss} are not [B, N, 4] / [B, C, N]")
        if bs[0] != 1 or ss[1] != 1:
            raise _Unsupported(f"{bs[0]} batches and {ss[1]} classes: only one batch and one class map to TFLite's "
                               "NON_MAX_SUPPRESSION_V4 (its result has one row per selected box of one class)")
        n = bs[1]

        def scalar(i, what, default):
            if len(node.input) <= i or not node.input[i]:
                return default
            v = np.asarray(self.need_const(node.input[i], what)).reshape(-1)
            if v.size != 1:
                raise _Unsupported(f"{what} holds {v.size} values, not one")
            return v[0]

        max_out = int(scalar(2, "max_output_boxes_per_class", 0))
        iou = float(np.float32(scalar(3, "iou_threshold", 0.0)))
        score = float(np.float32(scalar(4, "score_threshold", -np.inf)))
        if max_out <= 0:
            raise _Unsupported("max_output_boxes_per_class is absent or <= 0: ONNX selects no box (an empty result)")
        if not 0.0 <= iou < 1.0:
            raise _Unsupported(f"iou_threshold {iou} outside [0, 1) (ONNX suppresses at IoU > it; TFLite's NMS takes "
                               "thresholds up to 1 and suppresses at IoU >= it)")
        readers = [n2.name or n2.op_type for n2 in self.proto.graph.node if node.output[0] in n2.input]
        if readers:
            raise _Unsupported(f"its [num_selected, 3] result feeds other nodes ({', '.join(readers[:3])}): TFLite "
                               "shapes are static, so it would have a fixed row count padded with -1")
        m = min(max_out, n)
        b = self.reshape(boxes, (n, 4), "boxes")
        if int(a.get("center_point_box", 0)):  # [x_center, y_center, width, height] -> [y1, x1, y2, x2]
            xc, yc, w, h = (self._tmp(f"box_{c}", (n, 1)) for c in ("xc", "yc", "w", "h"))
            self._op("SPLIT", [self._i32("split_axis", 1), b], [xc, yc, w, h], num_splits=4)
            half = self._f32("half", 0.5)
            hw = self.binary("MUL", w, half, "half_w", fused_activation_function="NONE")
            hh = self.binary("MUL", h, half, "half_h", fused_activation_function="NONE")
            corners = [self.binary("SUB", yc, hh, "y1", fused_activation_function="NONE"),
                       self.binary("SUB", xc, hw, "x1", fused_activation_function="NONE"),
                       self.binary("ADD", yc, hh, "y2", fused_activation_function="NONE"),
                       self.binary("ADD", xc, hw, "x2", fused_activation_function="NONE")]
            b = self._tmp("corners", (n, 4))
            self._op("CONCATENATION", corners, [b], axis=1, fused_activation_function="NONE")
        s = self.reshape(scores, (n,), "scores")
        sel, count = self._tmp("selected", (m,), "INT32"), self._tmp("count", (), "INT32")
        above = float(np.nextafter(np.float32(iou), np.float32(np.inf)))
        self._op("NON_MAX_SUPPRESSION_V4", [b, s, self._const("max_output", np.array(m, np.int32), "INT32"),
                                            self._const("iou_threshold", np.array(above, np.float32), "FLOAT32"),
                                            self._const("score_threshold", np.array(score, np.float32), "FLOAT32")],
                 [sel, count])
        # row r is kept when r < count: keep = clamp(count - r, 0, 1) - 1 is 0 there and -1 past the count
        left = self.binary("SUB", count, self._i32("rows", np.arange(m)), "left", fused_activation_function="NONE")
        valid = self.binary("MAXIMUM", self.binary("MINIMUM", left, self._i32("one", 1), "at_most_one"),
                            self._i32("zero", 0), "valid")
        keep = self.binary("ADD", valid, self._i32("minus_one", -1), "keep", fused_activation_function="NONE")
        column = self.binary("ADD", sel, keep, "box_column", fused_activation_function="NONE")  # unused slots are 0
        rows = self._tmp("rows32", (m, 3), "INT32")
        self._op("PACK", [keep, keep, column], [rows], values_count=3, axis=1)
        self.shapes[node.output[0]] = (m, 3)
        out = self.out(node, 0, type="INT64")
        self._op("CAST", [rows], [out], in_data_type="INT32", out_data_type="INT64")
        note = (f"NonMaxSuppression '{self.node_name}': output '{node.output[0]}' has a fixed {m} rows (TFLite shapes "
                "are static; ONNX gives one row per selected box): rows past the selected count are -1; equal "
                "scores are taken in LiteRT's order (its priority queue), not by box index as onnxruntime; a box "
                "with no area is selected repeatedly while it has the best score (LiteRT's NMS re-queues "
                "selected boxes; onnxruntime selects it once)")
        from edge_sdk import log

        log.warning(note)  # (the convert summary does not print import notes; the report's "notes" holds it)
        self.notes.append(note)

    # ------------------------------------------------------------------ shape and data movement
    def _reshape_node(self, node, a=None):
        x = self.value(node.input[0])
        out = self.out(node, type=self.ttype(x))
        self.reshape(x, self.shape(out), out=out)

    _op_Reshape = _reshape_node
    _op_Flatten = _reshape_node
    _op_Squeeze = _reshape_node
    _op_Unsqueeze = _reshape_node

    def _op_Identity(self, node, a):
        self.alias(node, self.value(node.input[0]))

    def _op_Dropout(self, node, a):
        """Inference: the input as it is. training_mode (input 2) true or known only at run time drops values at
        random: refused, not written as the identity."""
        if len(node.output) > 1 and node.output[1] and node.output[1] in self.used:
            raise _Unsupported("the mask output of Dropout")
        if len(node.input) > 2 and node.input[2]:
            training = self.const(node.input[2])
            if training is None or bool(np.asarray(training).reshape(-1)[0]):
                raise _Unsupported(f"training_mode '{node.input[2]}' is "
                                   + ("known only at run time" if training is None else "true")
                                   + ": training Dropout drops values at random (export the model in eval mode)")
        self.alias(node, self.value(node.input[0]))

    def _op_Cast(self, node, a):
        x = self.value(node.input[0])
        to = int(a["to"])
        if to not in _ONNX_TYPES:
            raise _Unsupported(f"cast to ONNX type {to}")
        target = _ONNX_TYPES[to]
        if target == self.ttype(x):
            self.alias(node, x)
            return
        self._op("CAST", [x], [self.out(node, type=target)], in_data_type=self.ttype(x), out_data_type=target)

    def _op_Transpose(self, node, a):
        x = self.value(node.input[0])
        rank = len(self.shape(x))
        perm = a.get("perm", list(range(rank))[::-1])
        if rank > 6:
            raise _Unsupported("transpose of rank above 6")
        self.transpose(x, perm, "perm", out=self.out(node, type=self.ttype(x)))

    def _op_Concat(self, node, a):
        ins = [self.value(i) for i in node.input if i]
        ins = [t for t in ins if 0 not in self.shape(t)]
        out = self.out(node, type=self.ttype(ins[0]))
        axis = self.axes([a["axis"]], len(self.shape(out)))[0]
        if len(ins) == 1:
            self.reshape(ins[0], self.shape(out), out=out)
            return
        self._op("CONCATENATION", ins, [out], axis=axis, fused_activation_function="NONE")

    def _op_Split(self, node, a):
        x = self.value(node.input[0])
        xs = self.shape(x)
        axis = self.axes([a.get("axis", 0)], len(xs))[0]
        outs = [self.out(node, i, type=self.ttype(x)) for i in range(len(node.output))]
        sizes = [self.shape(o)[axis] for o in outs]
        self._op("SPLIT_V", [x, self._i32("sizes", sizes), self._i32("axis", axis)], outs, num_splits=len(outs))

    def _op_Slice(self, node, a):
        x = self.value(node.input[0])
        xs = self.shape(x)
        rank = len(xs)
        if self.opset < 10:
            starts, ends = a["starts"], a["ends"]
            axes = a.get("axes", list(range(len(starts))))
            steps = [1] * len(starts)
        else:
            starts = self.need_const(node.input[1], "starts").reshape(-1).tolist()
            ends = self.need_const(node.input[2], "ends").reshape(-1).tolist()
            axes = (self.need_const(node.input[3], "axes").reshape(-1).tolist()
                    if len(node.input) > 3 and node.input[3] else list(range(len(starts))))
            steps = (self.need_const(node.input[4], "steps").reshape(-1).tolist()
                     if len(node.input) > 4 and node.input[4] else [1] * len(starts))
        begin, end, stride = [0] * rank, list(xs), [1] * rank
        end_mask = 0
        for s, e, ax, st in zip(starts, ends, self.axes(axes, rank), steps):
            st = int(st)
            if st == 0:
                raise _Unsupported("step 0")
            s = max(min(int(s), 2**62), -2**62)
            e = max(min(int(e), 2**62), -2**62)
            b_, e_, st_ = slice(s, e, st).indices(xs[ax])
            begin[ax], end[ax], stride[ax] = b_, e_, st_
            if st_ < 0 and e_ < 0:
                end_mask |= 1 << ax
                end[ax] = 0
        out = self.out(node, type=self.ttype(x))
        self._op("STRIDED_SLICE", [x, self._i32("begin", begin), self._i32("end", end), self._i32("strides", stride)],
                 [out], end_mask=end_mask)

    def _op_Pad(self, node, a):
        x = self.value(node.input[0])
        rank = len(self.shape(x))
        mode = a.get("mode", "constant")
        if self.opset < 11:
            pads, value = a["pads"], float(a.get("value", 0.0))
        else:
            pads = self.need_const(node.input[1], "pads").reshape(-1).tolist()
            value = 0.0
            if len(node.input) > 2 and node.input[2]:
                value = float(np.asarray(self.need_const(node.input[2], "constant_value")).reshape(-1)[0])
        axes = list(range(rank))
        if len(node.input) > 3 and node.input[3]:
            axes = self.axes(self.need_const(node.input[3], "axes").reshape(-1).tolist(), rank)
        n = len(axes)
        paddings = [[0, 0] for _ in range(rank)]
        for k, ax in enumerate(axes):
            paddings[ax] = [int(pads[k]), int(pads[k + n])]
        if any(p < 0 for pr in paddings for p in pr):
            raise _Unsupported("negative pads (cropping)")
        out = self.out(node, type=self.ttype(x))
        if mode == "reflect":
            if any(max(pr) > d - 1 for pr, d in zip(paddings, self.shape(x))):
                raise _Unsupported("reflect padding wider than the dimension minus one")
            self._op("MIRROR_PAD", [x, self._i32("paddings", paddings)], [out], mode="REFLECT")
            return
        if mode in ("edge", "wrap"):  # repeat the border / wrap around: a GATHER of clamped / modular indices
            t = x
            for ax, (lo, hi) in enumerate(paddings):
                if not (lo or hi):
                    continue
                size = self.shape(t)[ax]
                span = np.arange(-lo, size + hi)
                idx = (np.clip(span, 0, size - 1) if mode == "edge" else span % size).astype(np.int32)
                shape = list(self.shape(t))
                shape[ax] = idx.size
                last = all(not any(pr) for pr in paddings[ax + 1:])
                g = out if last else self._tmp("edge_pad", tuple(shape), self.ttype(x))
                self._op("GATHER", [t, self._i32("edge_index", idx)], [g], axis=ax, batch_dims=0)
                t = g
            if t == x:
                self.reshape(x, self.shape(out), out=out)
            return
        if mode != "constant":
            raise _Unsupported(f"mode '{mode}' (constant, reflect, edge and wrap are supported)")
        if value == 0.0:
            self._op("PAD", [x, self._i32("paddings", paddings)], [out])
        else:
            if self.ttype(x) != "FLOAT32":
                raise _Unsupported("non-zero pad value on a non-float tensor")
            self._op("PADV2", [x, self._i32("paddings", paddings), self._f32("value", [value])], [out])

    def _op_Gather(self, node, a):
        x = self.value(node.input[0])
        xs = self.shape(x)
        axis = self.axes([a.get("axis", 0)], len(xs))[0]
        idx = self.const(node.input[1])
        if idx is not None:
            idx = np.where(idx < 0, idx + xs[axis], idx).astype(np.int32)
            it = self._i32("indices", idx)
        else:
            it = self.value(node.input[1])
        self._op("GATHER", [x, it], [self.out(node, type=self.ttype(x))], axis=axis, batch_dims=0)

    def _op_GatherElements(self, node, a):
        """Constant indices: each output element's flat position in the data is known, so one GATHER from
        the flattened data."""
        x = self.value(node.input[0])
        xs = self.shape(x)
        idx = self.const(node.input[1])
        if idx is None:
            return self._gather_elements_runtime(node, a)
        axis = self.axes([a.get("axis", 0)], len(xs))[0]
        idx = np.asarray(idx, np.int64)
        if idx.ndim != len(xs) or any(idx.shape[d] > xs[d] for d in range(len(xs)) if d != axis):
            raise _Unsupported(f"indices of shape {idx.shape} for data of shape {xs}")
        idx = np.where(idx < 0, idx + xs[axis], idx)
        if idx.size and (idx.min() < 0 or idx.max() >= xs[axis]):
            raise _Unsupported(f"an index outside 0..{xs[axis] - 1}")
        coords = list(np.indices(idx.shape))
        coords[axis] = idx
        flat_idx = np.ravel_multi_index(coords, xs).astype(np.int32)
        flat = self.reshape(x, (int(np.prod(xs, dtype=np.int64)),), "flat")
        self._op("GATHER", [flat, self._i32("flat_indices", flat_idx)], [self.out(node, type=self.ttype(x))],
                 axis=0, batch_dims=0)

    def _op_Where(self, node, a):
        """SELECT_V2 (the condition, constant or computed at run time, and both branches broadcast); a constant
        condition that picks one branch everywhere leaves just that branch (broadcast to the output)."""
        cond = self.const(node.input[0])
        if cond is None or cond.size == 0 or (cond.any() and not cond.all()):
            return self._where_select(node)
        x, y = self.value(node.input[1]), self.value(node.input[2])
        if self.ttype(x) != self.ttype(y):
            raise _Unsupported(f"branch types differ ({self.ttype(x)}, {self.ttype(y)})")
        pick = x if cond.all() else y
        if tuple(self.shape(pick)) == tuple(self.shapes[node.output[0]]):
            self.alias(node, pick)
            return
        out = self.out(node, type=self.ttype(pick))
        self._op("BROADCAST_TO", [pick, self._i32("shape", list(self.shape(out)))], [out], version=2)

    def _op_Expand(self, node, a):
        x = self.value(node.input[0])
        out = self.out(node, type=self.ttype(x))
        if self.shape(out) == self.shape(x):
            self.values[node.output[0]] = x
            return
        self._op("BROADCAST_TO", [x, self._i32("shape", list(self.shape(out)))], [out], version=2)

    def _op_Tile(self, node, a):
        x = self.value(node.input[0])
        reps = self.need_const(node.input[1], "repeats").reshape(-1)
        self._op("TILE", [x, self._i32("multiples", reps)], [self.out(node, type=self.ttype(x))])

    def _op_Shape(self, node, a):
        raise _Unsupported("Shape of a tensor without a static shape")

    def _op_Resize(self, node, a):
        """RESIZE_NEAREST_NEIGHBOR / RESIZE_BILINEAR when one of their settings computes ONNX's result; else each
        resized axis on its own (ONNX's resize is separable): its constant [out, in] interpolation matrix, found by
        resizing the identity with this node's own attributes on onnx's reference evaluator, applied as a GATHER
        (nearest: one source per output) or a FULLY_CONNECTED along that axis. So every coordinate transformation
        and nearest mode, cubic, antialias, any rank and the channel axis map too. Both fix the output size and the
        interpolation at convert time: a scales / sizes input known only at run time is refused (a graph input can
        be pinned), never read as the declared output shape's ratio."""
        slots = ((2, "scales"), (3, "sizes")) if node.op_type == "Resize" and self.opset >= 11 else ((1, "scales"),)
        for k, what in slots:
            if len(node.input) > k and node.input[k] and self.const(node.input[k]) is None:
                pin = (f": pin it (--input-value {node.input[k]}=...)" if node.input[k] in self._graph_inputs()
                       else "")
                raise _Unsupported(f"its {what} '{node.input[k]}' is known only at run time; the converted resize "
                                   f"fixes its output size and interpolation at convert time{pin}")
        try:
            self._resize_tflite(node, a)
        except _Unsupported as exc:
            self._resize_by_axes(node, a, str(exc))

    def _resize_by_axes(self, node, a, why: str):
        x = self.value(node.input[0])
        xs = self.shape(x)
        out = self.values.get(node.output[0]) or self.out(node, type=self.ttype(x))
        os_ = self.shape(out)
        if node.op_type == "Upsample" or self.opset < 11:
            raise _Unsupported(why)
        if a.get("coordinate_transformation_mode") == "tf_crop_and_resize":
            raise _Unsupported(f"{why}; coordinate_transformation_mode 'tf_crop_and_resize' (a run-time roi crop)")
        if a.get("keep_aspect_ratio_policy", "stretch") != "stretch":
            raise _Unsupported(f"{why}; keep_aspect_ratio_policy '{a['keep_aspect_ratio_policy']}'")
        rank = len(xs)
        scales = self.const(node.input[2]) if len(node.input) > 2 and node.input[2] else None
        if scales is not None and np.size(scales) and not (len(node.input) > 3 and node.input[3]):
            scales = np.asarray(scales, np.float64).reshape(-1)
            if a.get("axes") is not None:
                full = np.ones(rank)
                for ax, sc in zip(self.axes(a["axes"], rank), scales):
                    full[ax] = sc
                scales = full
        else:
            scales = None
        t = x
        for axis in range(rank):
            if xs[axis] == os_[axis] and (scales is None or scales[axis] == 1.0):
                continue
            matrix = self._resize_matrix(a, xs[axis], os_[axis], None if scales is None else float(scales[axis]))
            t = self._apply_along(t, axis, matrix, out if all(
                xs[k] == os_[k] and (scales is None or scales[k] == 1.0) for k in range(axis + 1, rank)) else None)
        if t != out:
            self.reshape(t, os_, out=out)

    def _resize_matrix(self, a, n_in: int, n_out: int, scale) -> np.ndarray:
        """[n_out, n_in]: output j = sum_i m[j, i] * input i, for one axis, by ONNX's Resize of the identity
        (nearest: the source indices directly, which also covers opset 11's tf_half_pixel_for_nn)."""
        from onnx import TensorProto, helper

        if a.get("mode", "nearest") == "nearest" and not int(a.get("antialias", 0)):
            src = _onnx_nearest(n_in, n_out, scale if scale is not None else n_out / n_in,
                                a.get("coordinate_transformation_mode", "half_pixel"),
                                a.get("nearest_mode", "round_prefer_floor"))
            return np.eye(n_in, dtype=np.float32)[src]
        from onnx.reference import ReferenceEvaluator

        keep = ("mode", "coordinate_transformation_mode", "nearest_mode", "cubic_coeff_a", "exclude_outside",
                "extrapolation_value") + (("antialias",) if self.opset >= 18 else ())
        attrs = {k: a[k] for k in keep if k in a}
        ins = ["x", "", "scales"] if scale is not None else ["x", "", "", "sizes"]
        node = helper.make_node("Resize", ins, ["y"], **attrs)
        inits = [helper.make_tensor("scales", TensorProto.FLOAT, [2], [1.0, scale])] if scale is not None else \
            [helper.make_tensor("sizes", TensorProto.INT64, [2], [n_in, n_out])]
        graph = helper.make_graph([node], "basis",
                                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n_in, n_in])],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
        proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", max(self.opset, 11))])
        try:
            y = ReferenceEvaluator(proto).run(None, {"x": np.eye(n_in, dtype=np.float32)})[0]
        except Exception as exc:  # noqa: BLE001 -- an attribute combination the reference refuses
            raise _Unsupported(f"resize attributes {attrs}: {exc}") from None
        if y.shape != (n_in, n_out):
            raise _Unsupported(f"the resized axis has {y.shape[1]} values, the output {n_out}")
        return y.T.astype(np.float32)

    def _apply_along(self, t: int, axis: int, matrix: np.ndarray, out: int | None) -> int:
        """``matrix`` [m, n] applied along ``axis`` of t: a GATHER when each output takes exactly one input (any
        type), else a FULLY_CONNECTED over that axis moved last (float)."""
        ts = self.shape(t)
        rank = len(ts)
        m = matrix.shape[0]
        shape = ts[:axis] + (m,) + ts[axis + 1:]
        one_source = np.all(np.sum(matrix != 0, axis=1) == 1) and np.all(matrix[matrix != 0] == 1.0)
        if one_source:
            target = out if out is not None else self._tmp("resized", shape, self.ttype(t))
            self._op("GATHER", [t, self._i32("source", np.argmax(matrix, axis=1))], [target], axis=axis,
                     batch_dims=0)
            return target
        if self.ttype(t) != "FLOAT32":
            raise _Unsupported(f"interpolating a {self.ttype(t)} tensor")
        perm = list(range(rank))
        perm[axis], perm[-1] = perm[-1], perm[axis]
        src = t if axis == rank - 1 else self.transpose(t, perm, "axis_last")
        moved = self.shape(src)[:-1] + (m,)
        target = out if out is not None and axis == rank - 1 else self._tmp("interpolated", moved)
        self._op("FULLY_CONNECTED", [src, self._f32("interpolation", matrix), -1], [target],
                 fused_activation_function="NONE", keep_num_dims=True)
        if axis == rank - 1:
            return target
        return self.transpose(target, perm, "axis_back", out=out)

    def _resize_tflite(self, node, a):
        x = self.float_input(node)
        xs = self.shape(x)
        out = self.out(node)
        os_ = self.shape(out)
        if len(xs) != 4:
            raise _Unsupported(f"resize of a rank-{len(xs)} tensor (only 4-D NCHW)")
        if os_[:2] != xs[:2]:
            raise _Unsupported("resizing the batch or channel dimension")
        mode = a.get("mode", "nearest")
        if node.op_type == "Upsample" or self.opset < 11:
            ctm = "asymmetric"
            nearest_mode = "floor" if node.op_type == "Upsample" else "round_prefer_floor"
            if node.op_type == "Upsample" and self.opset < 9:
                scales = a.get("scales")
            else:
                scales = self.const(node.input[1])
        else:
            ctm = a.get("coordinate_transformation_mode", "half_pixel")
            nearest_mode = a.get("nearest_mode", "round_prefer_floor")
            scales = self.const(node.input[2]) if len(node.input) > 2 and node.input[2] else None
            if len(node.input) > 3 and node.input[3]:
                scales = None
            if int(a.get("antialias", 0)):
                raise _Unsupported("antialias=1")
        if scales is not None and np.size(scales) == 0:
            scales = None
        if scales is not None:
            scales = np.asarray(scales, np.float64).reshape(-1)
            if a.get("axes") is not None:
                full = np.ones(4)
                for ax, s in zip(self.axes(a["axes"], 4), scales):
                    full[ax] = s
                scales = full
            sc = scales[2:]
        else:
            sc = np.array([os_[2] / xs[2], os_[3] / xs[3]])
        if mode == "nearest":
            op, opts = "RESIZE_NEAREST_NEIGHBOR", self._nearest_options(xs[2:], os_[2:], sc, ctm, nearest_mode)
        elif mode in ("linear", "bilinear"):
            op, opts = "RESIZE_BILINEAR", self._linear_options(xs[2:], os_[2:], sc, ctm)
        else:
            raise _Unsupported(f"mode '{mode}'")
        t = self._to_nhwc(x)
        r = self._tmp("resize_nhwc", (xs[0], os_[2], os_[3], xs[1]))
        self._op(op, [t, self._i32("size", list(os_[2:]))], [r], **opts)
        self._from_nhwc(r, out)

    _op_Upsample = _resize_tflite

    def _nearest_options(self, ins, outs, scales, ctm, nearest_mode) -> dict:
        """The TFLite (align_corners, half_pixel_centers) whose source indices equal ONNX's on both axes."""
        for align, hpc in ((False, False), (False, True), (True, False)):
            ok = True
            for n_in, n_out, s in zip(ins, outs, scales):
                if not np.array_equal(_onnx_nearest(n_in, n_out, s, ctm, nearest_mode),
                                      _tflite_nearest(n_in, n_out, align, hpc)):
                    ok = False
                    break
            if ok:
                return {"align_corners": align, "half_pixel_centers": hpc}
        raise _Unsupported(f"nearest resize with coordinate_transformation_mode '{ctm}' and nearest_mode "
                           f"'{nearest_mode}' selects pixels no TFLite RESIZE_NEAREST_NEIGHBOR setting does")

    def _linear_options(self, ins, outs, scales, ctm) -> dict:
        for n_in, n_out, s in zip(ins, outs, scales):
            if abs(s - n_out / n_in) > 1e-6 * s and ctm != "align_corners":
                raise _Unsupported(f"scale {s} differs from output/input size {n_out}/{n_in}")
        if ctm == "align_corners":
            return {"align_corners": True, "half_pixel_centers": False}
        if ctm == "asymmetric":
            return {"align_corners": False, "half_pixel_centers": False}
        if ctm == "half_pixel" or (ctm == "pytorch_half_pixel" and min(outs) > 1):
            return {"align_corners": False, "half_pixel_centers": True}
        raise _Unsupported(f"linear resize with coordinate_transformation_mode '{ctm}'")

    # ------------------------------------------------------------------ recurrent
    def _op_LSTM(self, node, a):
        x = self.float_input(node)
        if a.get("direction", "forward") != "forward":
            raise _Unsupported(f"direction '{a['direction']}' (only forward)")
        acts = [s.lower() for s in a.get("activations", ["Sigmoid", "Tanh", "Tanh"])]
        if acts != ["sigmoid", "tanh", "tanh"]:
            raise _Unsupported(f"activations {a['activations']} (only Sigmoid, Tanh, Tanh)")
        if int(a.get("input_forget", 0)):
            raise _Unsupported("input_forget=1 (coupled gates)")
        layout = int(a.get("layout", 0))
        inp = list(node.input) + [""] * (8 - len(node.input))
        w = np.asarray(self.need_const(inp[1], "W"), np.float32)[0]
        r = np.asarray(self.need_const(inp[2], "R"), np.float32)[0]
        hidden = int(a.get("hidden_size", r.shape[-1]))
        if inp[3] and self.const(inp[3]) is None:
            raise _Unsupported("B must be a constant")
        b = np.asarray(self.const(inp[3]), np.float32)[0] if inp[3] else np.zeros(8 * hidden, np.float32)
        xs = self.shape(x)
        steps, batch = (xs[0], xs[1]) if layout == 0 else (xs[1], xs[0])
        if inp[4]:
            lens = self.need_const(inp[4], "sequence_lens")
            if not np.all(lens == steps):
                raise _Unsupported("sequence_lens shorter than the sequence")
        stateful = any(inp[k] and (self.const(inp[k]) is None or np.any(self.const(inp[k]) != 0)) for k in (5, 6, 7))
        if stateful or (len(node.output) > 2 and node.output[2] and node.output[2] in self.used) or \
                a.get("clip") is not None:
            # state given or read: unrolled, so h / c are ordinary tensors (graph inputs in, outputs out)
            if steps > _MAX_UNROLLED_STEPS:
                raise _Unsupported(f"{steps} time steps with state in / out (or clip, peepholes): unrolled, at most "
                                   f"{_MAX_UNROLLED_STEPS} steps per invoke (stream shorter chunks)")
            self._lstm_unrolled(node, a, x, w, r, b, hidden, layout, steps, batch)
            return
        for k, what in ((5, "initial_h"), (6, "initial_c"), (7, "P (peepholes)")):
            if inp[k]:
                v = self.need_const(inp[k], what)
                if np.any(v != 0):
                    raise _Unsupported(f"non-zero {what}")
        if len(node.output) > 2 and node.output[2] and node.output[2] in self.used:
            raise _Unsupported("the Y_c output (TFLite keeps the cell state inside the op)")
        if a.get("clip") is not None:
            raise _Unsupported("clip (ONNX clips gate inputs; TFLite clips the cell state)")
        h = hidden
        gate = {name: slice(k * h, (k + 1) * h) for k, name in enumerate("iofc")}
        bias = b[:4 * h] + b[4 * h:]
        ins = [x]
        for name in "ifco":
            ins.append(self._f32(f"w_{name}", w[gate[name]]))
        for name in "ifco":
            ins.append(self._f32(f"r_{name}", r[gate[name]]))
        ins += [-1, -1, -1]
        for name in "ifco":
            ins.append(self._f32(f"b_{name}", bias[gate[name]]))
        ins += [-1, -1]
        ins.append(self.g.tensor(self._unique(f"{self.node_name}/h_state"), (batch, h), "FLOAT32", is_variable=True))
        ins.append(self.g.tensor(self._unique(f"{self.node_name}/c_state"), (batch, h), "FLOAT32", is_variable=True))
        ins += [-1, -1, -1, -1]
        seq_shape = (steps, batch, h) if layout == 0 else (batch, steps, h)
        seq = self._tmp("sequence", seq_shape)
        self._op("UNIDIRECTIONAL_SEQUENCE_LSTM", ins, [seq], fused_activation_function="TANH", cell_clip=0.0,
                 proj_clip=0.0, time_major=layout == 0)
        if node.output[0]:
            y = self.out(node, 0)
            self.reshape(seq, self.shape(y), out=y)
        if len(node.output) > 1 and node.output[1]:
            yh = self.out(node, 1)
            begin = [steps - 1, 0, 0] if layout == 0 else [0, steps - 1, 0]
            end = [steps, batch, h] if layout == 0 else [batch, steps, h]
            self._op("STRIDED_SLICE", [seq, self._i32("last_begin", begin), self._i32("last_end", end),
                                       self._i32("last_strides", [1, 1, 1])], [yh])

    def _lstm_unrolled(self, node, a, x, w, r, b, h, layout, steps, batch):
        """ONNX LSTM (forward) unrolled over its static sequence, for streaming models: the initial state comes
        from any tensor (a graph input) and the final h / c are ordinary tensors (Y_h, Y_c: graph outputs).
        The input projection of every step is one FULLY_CONNECTED (all four gates, both biases folded in);
        per step one FULLY_CONNECTED of h, an ADD, SPLIT into the gates (ONNX order i, o, f, c), peepholes,
        clip, LOGISTIC / TANH and c = f * c + i * g, h = o * tanh(c)."""
        inp = list(node.input) + [""] * (8 - len(node.input))
        feat = self.shape(x)[2]
        none = {"fused_activation_function": "NONE"}

        def state(k, what):
            if not inp[k]:
                return self._f32(what, np.zeros((batch, h), np.float32))
            t = self.float_input(node, k)
            if int(np.prod(self.shape(t))) != batch * h:
                raise _Unsupported(f"{what} of shape {list(self.shape(t))} (expected {batch * h} values)")
            return self.reshape(t, (batch, h), what)

        h_cur, c_cur = state(5, "initial_h"), state(6, "initial_c")
        p = None
        if inp[7]:
            p = np.asarray(self.need_const(inp[7], "P (peepholes)"), np.float32).reshape(-1)[:3 * h]
        clip = a.get("clip")
        if layout == 1:
            x = self.transpose(x, [1, 0, 2], "time_major")
        flat = self.reshape(x, (steps * batch, feat), "steps_rows")
        proj = self._tmp("x_proj", (steps * batch, 4 * h))
        self._op("FULLY_CONNECTED", [flat, self._f32("w", w), self._f32("bias", b[:4 * h] + b[4 * h:])], [proj],
                 keep_num_dims=False, **none)
        if steps == 1:
            xg = [self.reshape(proj, (batch, 4 * h), "x_step0")]
        else:
            proj = self.reshape(proj, (steps, batch, 4 * h), "x_proj_steps")
            xg = [self._tmp(f"x_step{t}", (batch, 4 * h)) for t in range(steps)]
            self._op("UNPACK", [proj], xg, num=steps, axis=0)
        rw = self._f32("r", r)
        split_axis = self._i32("gate_axis", 1)
        if p is not None:
            p_i, p_o, p_f = (self._f32(f"p_{g}", p[k * h:(k + 1) * h]) for k, g in enumerate("iof"))
        if clip is not None:
            lo, hi = self._f32("clip_lo", -float(clip)), self._f32("clip_hi", float(clip))
        hs = []
        for t in range(steps):
            rec = self._tmp("h_proj", (batch, 4 * h))
            self._op("FULLY_CONNECTED", [h_cur, rw, -1], [rec], keep_num_dims=False, **none)
            pre = self.binary("ADD", xg[t], rec, "gates", **none)
            if clip is not None:
                pre = self.binary("MINIMUM", self.binary("MAXIMUM", pre, lo, "clip_low"), hi, "clipped")
            gi, go, gf, gc = (self._tmp(f"gate_{g}", (batch, h)) for g in "iofc")
            self._op("SPLIT", [split_axis, pre], [gi, go, gf, gc], num_splits=4)
            if p is not None:
                gi = self.binary("ADD", gi, self.binary("MUL", p_i, c_cur, "peep_i", **none), "gate_i_p", **none)
                gf = self.binary("ADD", gf, self.binary("MUL", p_f, c_cur, "peep_f", **none), "gate_f_p", **none)
            i = self.unary("LOGISTIC", gi, "i")
            f = self.unary("LOGISTIC", gf, "f")
            g = self.unary("TANH", gc, "g")
            c_cur = self.binary("ADD", self.binary("MUL", f, c_cur, "f_c", **none),
                                self.binary("MUL", i, g, "i_g", **none), "c", **none)
            if p is not None:
                go = self.binary("ADD", go, self.binary("MUL", p_o, c_cur, "peep_o", **none), "gate_o_p", **none)
            o = self.unary("LOGISTIC", go, "o")
            h_cur = self.binary("MUL", o, self.unary("TANH", c_cur, "tanh_c"), "h", **none)
            hs.append(h_cur)
        outs = list(node.output) + [""] * (3 - len(node.output))
        if outs[0]:
            y = self.out(node, 0)
            if steps == 1:
                self.reshape(hs[0], self.shape(y), out=y)
            else:
                packed = self._tmp("sequence", (steps, batch, h) if layout == 0 else (batch, steps, h))
                self._op("PACK", hs, [packed], values_count=steps, axis=0 if layout == 0 else 1)
                self.reshape(packed, self.shape(y), out=y)
        for k, v in ((1, h_cur), (2, c_cur)):
            if outs[k]:
                yk = self.out(node, k)
                self.reshape(v, self.shape(yk), out=yk)
        self._record_state(node, "LSTM", steps, {"initial_h": inp[5], "initial_c": inp[6]},
                           {"Y_h": outs[1], "Y_c": outs[2]})

    def _record_state(self, node, op, steps, ins: dict, outs: dict):
        """A recurrent node whose state enters or leaves the model (for ``import_notes["state"]``)."""
        ins = {k: v for k, v in ins.items() if v and self.const(v) is None}
        outs = {k: v for k, v in outs.items() if v and v in self.used}
        if ins or outs:
            self.state_nodes.append({"node": self.node_name, "op": op, "steps": steps, "in": ins, "out": outs})

    def _state_report(self) -> list[dict]:
        """Per recurrent node with state in / out: which graph inputs feed its initial state, which graph outputs
        its final state reaches (and a note line each)."""
        graph = self.proto.graph
        _, flows = _dataflow(graph)  # a state inside an If branch leaves through the If's outputs
        outputs = {o.name for o in graph.output}

        def reaches(name):
            seen, todo, found = set(), [name], []
            while todo:
                v = todo.pop()
                if v in seen:
                    continue
                seen.add(v)
                if v in outputs:
                    found.append(v)
                todo.extend(flows.get(v, ()))
            return sorted(found)

        report = []
        for rec in self.state_nodes:
            entry = {"node": rec["node"], "op": rec["op"], "steps": rec["steps"],
                     "state_inputs": {k: self._input_ancestors(v) for k, v in rec["in"].items()},
                     "state_outputs": {k: reaches(v) for k, v in rec["out"].items()}}
            report.append(entry)
            parts = [f"{k} from input {', '.join(repr(i) for i in v) or '(computed)'}"
                     for k, v in entry["state_inputs"].items()]
            parts += [f"{k} to output {', '.join(repr(o) for o in v) or '(internal)'}"
                      for k, v in entry["state_outputs"].items()]
            self.notes.append(f"{rec['op']} '{rec['node']}': streaming state, {'; '.join(parts)} (unrolled over "
                              f"{rec['steps']} step(s) per invoke: feed each output state back as the next "
                              "chunk's input)")
        return report

    # which state of a recurrent op enters as which graph input and leaves as which graph output
    _STATE_KINDS = {"LSTM": (("initial_h", "Y_h"), ("initial_c", "Y_c")), "GRU": (("initial_h", "Y_h"),),
                    "RNN": (("initial_h", "Y_h"),)}

    def _state_pairs(self, report: list[dict]) -> list[dict]:
        """The graph input / output pairs that carry one state from invoke to invoke (``converters.stateful``
        turns each into a resource variable): an input the recurrent node reads its initial state from and an
        output its final state reaches, of the same static shape and element type. A state fed by or reaching
        several such tensors is ambiguous and pairs nothing (a note says so); a state kept in two recurrent
        nodes' (an LSTM's h and c concatenated, as silero VAD does) pairs once."""
        signature = {}
        for vi in list(self.proto.graph.input) + list(self.proto.graph.output):
            signature.setdefault(vi.name, (self.shapes.get(vi.name), self.types.get(vi.name)))
        pairs: dict[tuple[str, str], dict] = {}
        for entry in report:
            for k_in, k_out in self._STATE_KINDS.get(entry["op"], ()):
                ins, outs = entry["state_inputs"].get(k_in, []), entry["state_outputs"].get(k_out, [])
                fits = [(i, o) for i in ins for o in outs if _static(signature[i][0]) and signature[i] == signature[o]]
                if len(fits) == 1:
                    pair = pairs.setdefault(fits[0], {"input": fits[0][0], "output": fits[0][1], "states": []})
                    pair["states"].append(f"{entry['node']}:{k_in}")
                elif len(fits) > 1:
                    self.notes.append(f"{entry['op']} '{entry['node']}': its {k_in} / {k_out} could be carried by "
                                      f"{', '.join(f'{i} -> {o}' for i, o in fits)}: no state pair chosen")
        out = list(pairs.values())
        for key in ("input", "output"):
            names = [p[key] for p in out]
            clash = {n for n in names if names.count(n) > 1}
            if clash:
                self.notes.append(f"state {key}(s) {', '.join(sorted(clash))} carry several states: not paired")
                out = [p for p in out if p[key] not in clash]
        return out

    def _recurrent(self, node, a, kind):
        """ONNX RNN / GRU, forward, unrolled over the (static) sequence: the input projections of all steps
        in one FULLY_CONNECTED per gate, then per step a FULLY_CONNECTED of the hidden state, the gate math
        (GRU: z, r, candidate with either linear_before_reset) and h = hh + z * (h - hh); outputs by PACK."""
        x = self.float_input(node)
        if a.get("direction", "forward") != "forward":
            raise _Unsupported(f"direction '{a['direction']}' (only forward)")
        default = ["Tanh"] if kind == "RNN" else ["Sigmoid", "Tanh"]
        if a.get("activations") is not None and [s.lower() for s in a["activations"]] != [d.lower() for d in default]:
            raise _Unsupported(f"activations {a['activations']} (only {', '.join(default)})")
        if a.get("clip") is not None:
            raise _Unsupported("clip")
        gates = 1 if kind == "RNN" else 3
        layout = int(a.get("layout", 0))
        inp = list(node.input) + [""] * (6 - len(node.input))
        w = np.asarray(self.need_const(inp[1], "W"), np.float32)[0]
        r = np.asarray(self.need_const(inp[2], "R"), np.float32)[0]
        h = int(a.get("hidden_size", r.shape[-1]))
        b = np.zeros(2 * gates * h, np.float32)
        if inp[3]:
            b = np.asarray(self.need_const(inp[3], "B"), np.float32)[0]
        xs = self.shape(x)
        steps, batch, feat = (xs[0], xs[1], xs[2]) if layout == 0 else (xs[1], xs[0], xs[2])
        if inp[4]:
            lens = self.need_const(inp[4], "sequence_lens")
            if not np.all(lens == steps):
                raise _Unsupported("sequence_lens shorter than the sequence")
        if inp[5]:
            h0 = self.reshape(self.float_input(node, 5), (batch, h), "initial_h")
        else:
            h0 = self._f32("initial_h", np.zeros((batch, h), np.float32))
        if layout == 1:
            x = self.transpose(x, [1, 0, 2], "time_major")
        flat = self.reshape(x, (steps * batch, feat), "steps_rows")
        wb, rb = b[:gates * h], b[gates * h:]
        xg = []  # per gate: the input projection of every step, unpacked
        for g in range(gates):
            sl = slice(g * h, (g + 1) * h)
            proj = self._tmp("x_proj", (steps * batch, h))
            bias = wb[sl] + (rb[sl] if kind == "RNN" or g < 2 else 0.0)  # recurrence bias folded where it adds
            self._op("FULLY_CONNECTED", [flat, self._f32("w", w[sl]), self._f32("wb", bias)], [proj],
                     fused_activation_function="NONE", keep_num_dims=False)
            proj = self.reshape(proj, (steps, batch, h), "x_proj_steps")
            parts = [self._tmp(f"x_step{t}", (batch, h)) for t in range(steps)]
            self._op("UNPACK", [proj], parts, num=steps, axis=0)
            xg.append(parts)
        rw = [self._f32(f"r{g}", r[g * h:(g + 1) * h]) for g in range(gates)]

        def hfc(v, g, bias=None):
            y = self._tmp("h_proj", (batch, h))
            self._op("FULLY_CONNECTED", [v, rw[g], -1 if bias is None else self._f32("rb", bias)], [y],
                     fused_activation_function="NONE", keep_num_dims=False)
            return y

        lbr = int(a.get("linear_before_reset", 0))
        hs, cur = [], h0
        for t in range(steps):
            if kind == "RNN":
                cur = self.unary("TANH", self.binary("ADD", xg[0][t], hfc(cur, 0), "pre", fused_activation_function="NONE"),
                                 "h")
            else:
                z = self.unary("LOGISTIC", self.binary("ADD", xg[0][t], hfc(cur, 0), "z_pre",
                                                       fused_activation_function="NONE"), "z")
                rr = self.unary("LOGISTIC", self.binary("ADD", xg[1][t], hfc(cur, 1), "r_pre",
                                                        fused_activation_function="NONE"), "r")
                if lbr:
                    hp = self.binary("MUL", rr, hfc(cur, 2, rb[2 * h:]), "r_h", fused_activation_function="NONE")
                else:
                    hp = hfc(self.binary("MUL", rr, cur, "r_h", fused_activation_function="NONE"), 2, rb[2 * h:])
                hh = self.unary("TANH", self.binary("ADD", xg[2][t], hp, "n_pre", fused_activation_function="NONE"),
                                "n")
                d = self.binary("SUB", cur, hh, "h_minus_n", fused_activation_function="NONE")
                cur = self.binary("ADD", hh, self.binary("MUL", z, d, "z_d", fused_activation_function="NONE"), "h",
                                  fused_activation_function="NONE")
            hs.append(cur)
        if node.output[0]:
            y = self.out(node, 0)
            packed = self._tmp("sequence", (steps, batch, h) if layout == 0 else (batch, steps, h))
            self._op("PACK", hs, [packed], values_count=steps, axis=0 if layout == 0 else 1)
            self.reshape(packed, self.shape(y), out=y)
        if len(node.output) > 1 and node.output[1]:
            yh = self.out(node, 1)
            self.reshape(cur, self.shape(yh), out=yh)
        self._record_state(node, kind, steps, {"initial_h": inp[5]},
                           {"Y_h": node.output[1] if len(node.output) > 1 else ""})

    # ------------------------------------------------------------------ comparisons, logical ops, run-time Where
    # Comparisons give BOOL tensors (EQUAL .. GREATER_EQUAL, numpy broadcasting); And / Or / Not map to the
    # LOGICAL ops, Xor to NOT_EQUAL on BOOL; a Where whose condition is computed at run time is one SELECT_V2.
    def _compare_node(self, node, a, op):
        a_, b_ = self.value(node.input[0]), self.value(node.input[1])
        ta, tb = self.ttype(a_), self.ttype(b_)
        if ta != tb:
            raise _Unsupported(f"operand types differ ({ta}, {tb})")
        allowed = ("FLOAT32", "INT8", "INT16", "INT32", "INT64") + (("BOOL",) if op in ("EQUAL", "NOT_EQUAL") else ())
        if ta not in allowed:
            raise _Unsupported(f"operands of type {ta} (TFLite's {op} takes {', '.join(allowed)})")
        out = self.out(node, type="BOOL")
        if self.shape(a_) != self.shape(b_) and len(self.shape(out)) > 6:
            raise _Unsupported("broadcasting beyond rank 6")
        self._op(op, [a_, b_], [out])

    def _op_IsNaN(self, node, a):  # x != x holds exactly for NaN
        x = self.float_input(node)
        self._op("NOT_EQUAL", [x, x], [self.out(node, type="BOOL")])

    def _op_IsInf(self, node, a):
        x = self.float_input(node)
        pos, neg = int(a.get("detect_positive", 1)), int(a.get("detect_negative", 1))
        out = self.out(node, type="BOOL")
        if pos and neg:
            self._op("EQUAL", [self.unary("ABS", x, "abs"), self._f32("inf", np.inf)], [out])
        elif pos or neg:
            self._op("EQUAL", [x, self._f32("inf", np.inf if pos else -np.inf)], [out])
        else:  # detects nothing: all false
            self._op("LESS", [x, self._f32("neg_inf", -np.inf)], [out])

    def _logical_node(self, node, a, op):
        ins = [self.value(i) for i in node.input]
        for k, t in enumerate(ins):
            if self.ttype(t) != "BOOL":
                raise _Unsupported(f"input {k} has type {self.ttype(t)}; {node.op_type} takes BOOL tensors")
        out = self.out(node, type="BOOL")
        if len(ins) == 2 and self.shape(ins[0]) != self.shape(ins[1]) and len(self.shape(out)) > 6:
            raise _Unsupported("broadcasting beyond rank 6")
        self._op(op, ins, [out])

    def _gather_elements_runtime(self, node, a):
        """GatherElements with indices computed at run time: take-along-axis is a GATHER over the last axis with
        every other axis a batch dim (batch_dims = rank - 1), so the axis is swapped to last (TRANSPOSE) when it
        is not, and the data sliced first where the indices are shorter on another axis. Run-time indices must
        lie in 0..dim-1: a negative one (allowed by ONNX) is not wrapped (recorded in the import notes)."""
        x, it = self.value(node.input[0]), self.value(node.input[1])
        xs, js = tuple(self.shape(x)), tuple(self.shape(it))
        rank = len(xs)
        axis = self.axes([a.get("axis", 0)], rank)[0]
        if self.ttype(it) not in ("INT32", "INT64"):
            raise _Unsupported(f"indices of type {self.ttype(it)} (INT32 or INT64)")
        if len(js) != rank or any(js[d] > xs[d] for d in range(rank) if d != axis):
            raise _Unsupported(f"indices of shape {js} for data of shape {xs}")
        if rank > 6:
            raise _Unsupported("run-time indices on data of rank above 6")
        if rank == 0 or 0 in js:
            raise _Unsupported("empty or 0-d run-time indices")
        out = self.out(node, type=self.ttype(x))
        want = tuple(js[d] if d != axis else xs[d] for d in range(rank))
        if want != xs:
            sliced = self._tmp("sliced", want, self.ttype(x))
            self._op("STRIDED_SLICE", [x, self._i32("begin", [0] * rank), self._i32("end", list(want)),
                                       self._i32("strides", [1] * rank)], [sliced])
            x = sliced
        last = rank - 1
        if axis != last:
            perm = list(range(rank))
            perm[axis], perm[last] = last, axis
            xt, jt = self.transpose(x, perm, "data_t"), self.transpose(it, perm, "indices_t")
            g = self._tmp("gathered_t", [js[p] for p in perm], self.ttype(x))
            self._op("GATHER", [xt, jt], [g], axis=last, batch_dims=last)
            self.transpose(g, perm, "gathered", out=out)
        else:
            self._op("GATHER", [x, it], [out], axis=last, batch_dims=last)
        note = (f"GatherElements '{self.node_name}': run-time indices must lie in 0..{xs[axis] - 1} "
                "(negative indices are not wrapped)")
        self.notes.append(note)

    def _where_select(self, node):
        """Where with a run-time condition: SELECT_V2 broadcasts the condition and both branches."""
        c, x, y = (self.value(i) for i in node.input[:3])
        if self.ttype(c) != "BOOL":
            raise _Unsupported(f"condition of type {self.ttype(c)} (BOOL expected)")
        if self.ttype(x) != self.ttype(y):
            raise _Unsupported(f"branch types differ ({self.ttype(x)}, {self.ttype(y)})")
        allowed = ("FLOAT32", "INT8", "INT16", "INT32", "INT64", "BOOL")
        if self.ttype(x) not in allowed:
            raise _Unsupported(f"branches of type {self.ttype(x)} (SELECT_V2 takes {', '.join(allowed)})")
        out = self.out(node, type=self.ttype(x))
        if len({tuple(self.shape(t)) for t in (c, x, y)}) > 1 and len(self.shape(out)) > 6:
            raise _Unsupported("broadcasting beyond rank 6")
        self._op("SELECT_V2", [c, x, y], [out])

    # ------------------------------------------------------------------ issue 24: more of what exporters emit
    # Element-wise functions TFLite lacks, as decompositions over ops every runtime has (float inputs).
    def _op_Reciprocal(self, node, a):
        x = self.float_input(node)
        self.binary("DIV", self._f32("one", 1.0), x, "reciprocal", out=self.out(node), fused_activation_function="NONE")

    def _softplus(self, x: int, out: int | None = None) -> int:
        """log(1 + exp(x)) = max(x, 0) + log(1 + exp(-|x|)): no overflow for large x."""
        na = self.unary("NEG", self.unary("ABS", x, "abs"), "neg_abs")
        t = self.binary("ADD", self.unary("EXP", na, "exp"), self._f32("one", 1.0), "one_plus",
                        fused_activation_function="NONE")
        return self.binary("ADD", self.unary("RELU", x, "pos"), self.unary("LOG", t, "log"), "softplus", out=out,
                           fused_activation_function="NONE")

    def _op_Mish(self, node, a):  # x * tanh(softplus(x))
        x = self.float_input(node)
        t = self.unary("TANH", self._softplus(x), "tanh")
        self.binary("MUL", x, t, "mish", out=self.out(node), fused_activation_function="NONE")

    def _op_Softsign(self, node, a):  # x / (1 + |x|)
        x = self.float_input(node)
        d = self.binary("ADD", self.unary("ABS", x, "abs"), self._f32("one", 1.0), "one_plus_abs",
                        fused_activation_function="NONE")
        self.binary("DIV", x, d, "softsign", out=self.out(node), fused_activation_function="NONE")

    def _op_Celu(self, node, a):  # max(0, x) + min(0, alpha * (exp(x / alpha) - 1))
        x = self.float_input(node)
        alpha = float(a.get("alpha", 1.0))
        neg = self.binary("MINIMUM", x, self._f32("zero", 0.0), "neg")
        e = self.unary("EXP", self.binary("MUL", neg, self._f32("inv_alpha", 1.0 / alpha), "scaled",
                                          fused_activation_function="NONE"), "exp")
        em1 = self.binary("SUB", e, self._f32("one", 1.0), "expm1", fused_activation_function="NONE")
        em1 = self.binary("MUL", em1, self._f32("alpha", alpha), "neg_part", fused_activation_function="NONE")
        self.binary("ADD", self.unary("RELU", x, "pos"), em1, "celu", out=self.out(node),
                    fused_activation_function="NONE")

    def _select(self, cond: int, x: int, y: int, suffix: str, out: int | None = None) -> int:
        if out is None:
            shape = np.broadcast_shapes(self.shape(cond), self.shape(x), self.shape(y))
            out = self._tmp(suffix, shape, self.ttype(x))
        self._op("SELECT_V2", [cond, x, y], [out])
        return out

    def _compare(self, op: str, x: int, y: int, suffix: str) -> int:
        out = self._tmp(suffix, np.broadcast_shapes(self.shape(x), self.shape(y)), "BOOL")
        self._op(op, [x, y], [out])
        return out

    def _op_ThresholdedRelu(self, node, a):  # x where x > alpha, else 0
        x = self.float_input(node)
        above = self._compare("GREATER", x, self._f32("alpha", float(a.get("alpha", 1.0))), "above")
        self._select(above, x, self._f32("zero", 0.0), "thresholded", out=self.out(node))

    def _op_Shrink(self, node, a):  # x + bias below -lambd, x - bias above lambd, else 0
        x = self.float_input(node)
        lambd, bias = float(a.get("lambd", 0.5)), float(a.get("bias", 0.0))
        low = self._compare("LESS", x, self._f32("neg_lambd", -lambd), "low")
        high = self._compare("GREATER", x, self._f32("lambd", lambd), "high")
        up = self.binary("ADD", x, self._f32("bias", bias), "plus_bias", fused_activation_function="NONE")
        down = self.binary("SUB", x, self._f32("bias2", bias), "minus_bias", fused_activation_function="NONE")
        t = self._select(high, down, self._f32("zero", 0.0), "high_part")
        self._select(low, up, t, "shrink", out=self.out(node))

    def _op_Tan(self, node, a):
        x = self.float_input(node)
        self.binary("DIV", self.unary("SIN", x, "sin"), self.unary("COS", x, "cos"), "tan", out=self.out(node),
                    fused_activation_function="NONE")

    def _exp_pair(self, x: int) -> tuple[int, int]:  # (exp(x) / 2, exp(-x) / 2)
        half = self._f32("half", 0.5)
        ep = self.binary("MUL", self.unary("EXP", x, "exp"), half, "half_exp", fused_activation_function="NONE")
        en = self.binary("MUL", self.unary("EXP", self.unary("NEG", x, "neg"), "exp_neg"), half, "half_exp_neg",
                         fused_activation_function="NONE")
        return ep, en

    def _op_Sinh(self, node, a):
        ep, en = self._exp_pair(self.float_input(node))
        self.binary("SUB", ep, en, "sinh", out=self.out(node), fused_activation_function="NONE")

    def _op_Cosh(self, node, a):
        ep, en = self._exp_pair(self.float_input(node))
        self.binary("ADD", ep, en, "cosh", out=self.out(node), fused_activation_function="NONE")

    def _sqrt_one_minus_sq(self, x: int) -> int:  # sqrt(1 - x^2)
        sq = self.binary("MUL", x, x, "square", fused_activation_function="NONE")
        return self.unary("SQRT", self.binary("SUB", self._f32("one", 1.0), sq, "one_minus_sq",
                                              fused_activation_function="NONE"), "sqrt")

    def _op_Atan(self, node, a):
        x = self.float_input(node)
        self.binary("ATAN2", x, self._f32("one", 1.0), "atan", out=self.out(node))

    def _op_Asin(self, node, a):
        x = self.float_input(node)
        self.binary("ATAN2", x, self._sqrt_one_minus_sq(x), "asin", out=self.out(node))

    def _op_Acos(self, node, a):
        x = self.float_input(node)
        self.binary("ATAN2", self._sqrt_one_minus_sq(x), x, "acos", out=self.out(node))

    def _op_Asinh(self, node, a):  # sign(x) * log(|x| + sqrt(x^2 + 1)): no cancellation for negative x
        x = self.float_input(node)
        ax = self.unary("ABS", x, "abs")
        r = self.unary("SQRT", self.binary("ADD", self.binary("MUL", x, x, "square", fused_activation_function="NONE"),
                                           self._f32("one", 1.0), "sq_plus_one", fused_activation_function="NONE"),
                       "sqrt")
        lg = self.unary("LOG", self.binary("ADD", ax, r, "sum", fused_activation_function="NONE"), "log")
        self.binary("MUL", self.unary("SIGN", x, "sign"), lg, "asinh", out=self.out(node),
                    fused_activation_function="NONE")

    def _op_Acosh(self, node, a):  # log(x + sqrt(x^2 - 1))
        x = self.float_input(node)
        r = self.unary("SQRT", self.binary("SUB", self.binary("MUL", x, x, "square", fused_activation_function="NONE"),
                                           self._f32("one", 1.0), "sq_minus_one", fused_activation_function="NONE"),
                       "sqrt")
        self.unary("LOG", self.binary("ADD", x, r, "sum", fused_activation_function="NONE"), "acosh",
                   out=self.out(node))

    def _op_Atanh(self, node, a):  # log((1 + x) / (1 - x)) / 2
        x = self.float_input(node)
        one = self._f32("one", 1.0)
        q = self.binary("DIV", self.binary("ADD", one, x, "one_plus", fused_activation_function="NONE"),
                        self.binary("SUB", one, x, "one_minus", fused_activation_function="NONE"), "ratio",
                        fused_activation_function="NONE")
        self.binary("MUL", self.unary("LOG", q, "log"), self._f32("half", 0.5), "atanh", out=self.out(node),
                    fused_activation_function="NONE")

    def _op_Mod(self, node, a):
        """fmod=0: FLOOR_MOD (the result takes the divisor's sign, Python's %). fmod=1 (C's fmod: the dividend's
        sign): FLOOR_MOD, then minus the divisor where the remainder is non-zero and its sign differs from the
        dividend's -- exact for integers and floats alike."""
        x, y = self.value(node.input[0]), self.value(node.input[1])
        if self.ttype(x) != self.ttype(y):
            raise _Unsupported(f"operand types differ ({self.ttype(x)}, {self.ttype(y)})")
        if self.ttype(x) not in ("FLOAT32", "INT32", "INT64"):
            raise _Unsupported(f"operands of type {self.ttype(x)} (FLOAT32, INT32, INT64)")
        out = self.out(node, type=self.ttype(x))
        if not int(a.get("fmod", 0)):
            self._op("FLOOR_MOD", [x, y], [out])
            return
        r = self.binary("FLOOR_MOD", x, y, "floor_mod")
        zero = self._const("zero", np.zeros((), _NP_OF[self.ttype(x)]), self.ttype(x))
        signs_differ = self._compare("NOT_EQUAL", self._compare("LESS", r, zero, "r_negative"),
                                     self._compare("LESS", x, zero, "x_negative"), "signs_differ")
        fix = self._compare("LOGICAL_AND", self._compare("NOT_EQUAL", r, zero, "r_nonzero"), signs_differ, "fix")
        shifted = self.binary("SUB", r, y, "minus_divisor", fused_activation_function="NONE")
        self._select(fix, shifted, r, "fmod", out=out)

    def _op_CastLike(self, node, a):
        like = self.types.get(node.input[1], 1)
        self._op_Cast(node, {"to": like})

    # ------------------------------------------------------------------ more reductions
    def _reduce_plan(self, node, a, rank) -> tuple[list[int] | None, bool]:
        """(axes, keepdims) of a Reduce* node; axes None = no reduction (noop_with_empty_axes)."""
        axes = a.get("axes")
        if len(node.input) > 1 and node.input[1]:
            axes = self.need_const(node.input[1], "axes").reshape(-1).tolist()
        if not axes:
            if int(a.get("noop_with_empty_axes", 0)):
                return None, bool(a.get("keepdims", 1))
            axes = list(range(rank))
        return sorted(set(self.axes(axes, rank))), bool(a.get("keepdims", 1))

    def _op_ReduceL1(self, node, a):  # sum(|x|)
        self._reduce(node, a, "SUM", x=self.unary("ABS", self.float_input(node), "abs"))

    def _op_ReduceLogSum(self, node, a):  # log(sum(x))
        s_ = self._reduced_tmp(node, "sum")
        self._reduce(node, a, "SUM", out=s_)
        self.unary("LOG", s_, "log", out=self.out(node))

    def _op_ReduceProd(self, node, a):
        self._reduce(node, a, "REDUCE_PROD")

    def _op_ReduceLogSumExp(self, node, a):
        """log(sum(exp(x - m))) + m with m the max over the axes: no overflow for large x."""
        x = self.float_input(node)
        xs = self.shape(x)
        axes, keep = self._reduce_plan(node, a, len(xs))
        out = self.out(node)
        if axes is None:
            self.reshape(x, self.shape(out), out=out)
            return
        kept = tuple(1 if i in axes else d for i, d in enumerate(xs))
        m = self._tmp("max", kept)
        self._op("REDUCE_MAX", [x, self._i32("axes", axes)], [m], keep_dims=True)
        e = self.unary("EXP", self.binary("SUB", x, m, "shifted", fused_activation_function="NONE"), "exp")
        s_ = self._tmp("sum", kept)
        self._op("SUM", [e, self._i32("axes2", axes)], [s_], keep_dims=True)
        r = self.binary("ADD", self.unary("LOG", s_, "log"), m, "lse", fused_activation_function="NONE")
        self.reshape(r, self.shape(out), out=out)

    def _arg(self, node, a, op):
        """ARG_MAX / ARG_MIN (ONNX's int64 indices) over one axis; select_last_index=1 as the first index over the
        reversed axis (REVERSE_V2), mapped back as size - 1 - index."""
        x = self.value(node.input[0])
        if self.ttype(x) not in ("FLOAT32", "INT32", "INT8", "UINT8", "INT16"):
            raise _Unsupported(f"input of type {self.ttype(x)}")
        xs = self.shape(x)
        axis = self.axes([a.get("axis", 0)], len(xs))[0]
        out = self.out(node, type="INT64")
        last = int(a.get("select_last_index", 0))
        if last:
            x = self._reverse(x, axis)
        reduced = xs[:axis] + xs[axis + 1:]
        direct = not last and tuple(self.shape(out)) == tuple(reduced)
        idx = out if direct else self._tmp("index", reduced, "INT64")
        self._op(op, [x, self._i32("axis", [axis])], [idx], output_type="INT64")
        if last:
            idx = self.binary("SUB", self._const("last", np.array(xs[axis] - 1, np.int64), "INT64"), idx, "from_end",
                              fused_activation_function="NONE")
        if idx != out:
            self.reshape(idx, self.shape(out), out=out)

    def _reverse(self, x: int, axis: int) -> int:
        out = self._tmp("reversed", self.shape(x), self.ttype(x))
        self._op("REVERSE_V2", [x, self._i32("reverse_axis", [axis])], [out])
        return out

    def _op_ArgMax(self, node, a):
        self._arg(node, a, "ARG_MAX")

    def _op_ArgMin(self, node, a):
        self._arg(node, a, "ARG_MIN")

    def _op_Hardmax(self, node, a):
        """1.0 at the first maximum along the axis, else 0: ARG_MAX then ONE_HOT at that axis (opset < 13: over
        the input flattened to 2-D at the axis, as that opset defines it)."""
        x = self.float_input(node)
        xs = self.shape(x)
        out = self.out(node)
        t, axis = x, self.axes([a.get("axis", -1 if self.opset >= 13 else 1)], len(xs))[0]
        if self.opset < 13:
            t = self.reshape(x, (int(np.prod(xs[:axis], dtype=np.int64)), int(np.prod(xs[axis:], dtype=np.int64))),
                             "flat")
            axis = 1
        ts = self.shape(t)
        idx = self._tmp("index", ts[:axis] + ts[axis + 1:], "INT32")
        self._op("ARG_MAX", [t, self._i32("axis", [axis])], [idx], output_type="INT32")
        hot = out if ts == xs else self._tmp("one_hot", ts)
        self._op("ONE_HOT", [idx, self._const("depth", np.array(ts[axis], np.int32), "INT32"),
                             self._f32("on", 1.0), self._f32("off", 0.0)], [hot], axis=axis)
        if hot != out:
            self.reshape(hot, xs, out=out)

    # ------------------------------------------------------------------ more normalizations
    def _op_LpNormalization(self, node, a):  # x / ||x||_p along one axis (p = 1 or 2), as ONNX: no epsilon
        # a zero vector gives 0, as onnxruntime and onnx's reference do (0 / 0 would be NaN): the norm is taken at
        # least float32's smallest normal (a vector whose norm underflows below it: large finite values, not inf)
        x = self.float_input(node)
        xs = self.shape(x)
        axis = self.axes([a.get("axis", -1)], len(xs))[0]
        p = int(a.get("p", 2))
        if p not in (1, 2):
            raise _Unsupported(f"p={p} (1 and 2 are defined)")
        kept = tuple(1 if i == axis else d for i, d in enumerate(xs))
        t = self.unary("ABS", x, "abs") if p == 1 else self.binary("MUL", x, x, "square",
                                                                    fused_activation_function="NONE")
        norm = self._tmp("sum", kept)
        self._op("SUM", [t, self._i32("axes", [axis])], [norm], keep_dims=True)
        if p == 2:
            norm = self.unary("SQRT", norm, "l2")
        norm = self.binary("MAXIMUM", norm, self._f32("smallest_normal", np.finfo(np.float32).tiny), "nonzero")
        self.binary("DIV", x, norm, "normalized", out=self.out(node), fused_activation_function="NONE")

    def _op_MeanVarianceNormalization(self, node, a):
        """(x - mean) / (sqrt(var) + 1e-9) over the axes (default N, H, W): ONNX's function body."""
        x = self.float_input(node)
        xs = self.shape(x)
        axes = sorted(set(self.axes(a.get("axes", [0, 2, 3]), len(xs))))
        kept = tuple(1 if i in axes else d for i, d in enumerate(xs))
        mean = self._tmp("mean", kept)
        self._op("MEAN", [x, self._i32("axes", axes)], [mean], keep_dims=True)
        var = self._tmp("var", kept)
        self._op("MEAN", [self.binary("SQUARED_DIFFERENCE", x, mean, "sqdiff"), self._i32("axes2", axes)], [var],
                 keep_dims=True)
        std = self.binary("ADD", self.unary("SQRT", var, "std"), self._f32("eps", 1e-9), "std_eps",
                          fused_activation_function="NONE")
        centered = self.binary("SUB", x, mean, "centered", fused_activation_function="NONE")
        self.binary("DIV", centered, std, "mvn", out=self.out(node), fused_activation_function="NONE")

    def _op_GroupNormalization(self, node, a):
        """x [N, C, ...] as [N, G, C/G * rest], normalized over the last axis, back to [N, C, ...], then scale and
        bias per channel (opset 18 gives them per group: each repeated over its C/G channels)."""
        x = self.float_input(node)
        xs = self.shape(x)
        groups = int(a["num_groups"])
        if len(xs) < 3 or groups < 1 or xs[1] % groups:
            raise _Unsupported(f"input {xs} in {groups} groups (rank >= 3, channels a multiple of the groups)")
        c = xs[1]
        scale = np.asarray(self.need_const(node.input[1], "scale"), np.float32).reshape(-1)
        bias = np.asarray(self.need_const(node.input[2], "bias"), np.float32).reshape(-1)
        if scale.size == groups and c != groups:
            scale, bias = np.repeat(scale, c // groups), np.repeat(bias, c // groups)
        if scale.size != c or bias.size != c:
            raise _Unsupported(f"scale / bias of {scale.size} / {bias.size} values for {c} channels in {groups} "
                               "groups")
        t = self.reshape(x, (xs[0], groups, int(np.prod(xs[1:], dtype=np.int64)) // groups), "grouped")
        normalized = self._tmp("normalized", self.shape(t))
        self._normalize(t, [2], float(a.get("epsilon", 1e-5)), None, None, normalized)
        t = self.reshape(normalized, xs, "ungrouped")
        t = self.binary("MUL", t, self._channel_const("scale", scale, len(xs)), "scaled",
                        fused_activation_function="NONE")
        self.binary("ADD", t, self._channel_const("bias", bias, len(xs)), "shifted", out=self.out(node),
                    fused_activation_function="NONE")

    def _op_GlobalLpPool(self, node, a):  # (sum over the spatial axes of |x|^p) ^ (1/p), keepdims
        x = self.float_input(node)
        xs = self.shape(x)
        p = int(a.get("p", 2))
        axes = list(range(2, len(xs)))
        kept = tuple(xs[:2]) + (1,) * len(axes)
        out = self.out(node)
        if p == 1:
            t, post = self.unary("ABS", x, "abs"), None
        elif p == 2:
            t, post = self.binary("MUL", x, x, "square", fused_activation_function="NONE"), "SQRT"
        else:
            raise _Unsupported(f"p={p} (1 and 2 are supported)")
        s_ = out if post is None else self._tmp("sum", kept)
        self._op("SUM", [t, self._i32("axes", axes)], [s_], keep_dims=True)
        if post:
            self.unary(post, s_, "root", out=out)

    # ------------------------------------------------------------------ more data movement
    def _op_DepthToSpace(self, node, a):
        """NCHW -> NHWC, DEPTH_TO_SPACE (TFLite's is ONNX's DCR order), -> NCHW. CRD (PyTorch's PixelShuffle)
        first reorders the channels into DCR order with one GATHER of constant indices."""
        x = self.value(node.input[0])
        xs = self.shape(x)
        b = int(a["blocksize"])
        if len(xs) != 4 or xs[1] % (b * b):
            raise _Unsupported(f"input {xs} with blocksize {b} (4-D, channels a multiple of blocksize^2)")
        mode = a.get("mode", "DCR")
        if mode not in ("DCR", "CRD"):
            raise _Unsupported(f"mode '{mode}'")
        if mode == "CRD":  # DCR channel (i * b + j) * C' + c holds CRD channel (c * b + i) * b + j
            cp = xs[1] // (b * b)
            order = np.arange(xs[1]).reshape(cp, b, b).transpose(1, 2, 0).reshape(-1)
            g = self._tmp("dcr_order", xs, self.ttype(x))
            self._op("GATHER", [x, self._i32("channel_order", order)], [g], axis=1, batch_dims=0)
            x = g
        out = self.out(node, type=self.ttype(x))
        t = self._to_nhwc(x)
        r = self._tmp("d2s_nhwc", (xs[0], xs[2] * b, xs[3] * b, xs[1] // (b * b)), self.ttype(x))
        self._op("DEPTH_TO_SPACE", [t], [r], block_size=b)
        self._from_nhwc(r, out)

    def _op_SpaceToDepth(self, node, a):
        x = self.value(node.input[0])
        xs = self.shape(x)
        b = int(a["blocksize"])
        if len(xs) != 4 or xs[2] % b or xs[3] % b:
            raise _Unsupported(f"input {xs} with blocksize {b} (4-D, height and width multiples of it)")
        mode = a.get("mode", "DCR")  # opset 25 adds CRD (PixelUnshuffle's order); TFLite's is DCR
        if mode not in ("DCR", "CRD"):
            raise _Unsupported(f"mode '{mode}'")
        out = self.out(node, type=self.ttype(x))
        t = self._to_nhwc(x)
        oc = xs[1] * b * b
        r = self._tmp("s2d_nhwc", (xs[0], xs[2] // b, xs[3] // b, oc), self.ttype(x))
        self._op("SPACE_TO_DEPTH", [t], [r], block_size=b)
        if mode == "DCR":
            self._from_nhwc(r, out)
            return
        # CRD channel (c * b + i) * b + j is DCR channel (i * b + j) * C + c: one GATHER of constant indices
        d = self._tmp("s2d_dcr", (xs[0], oc, xs[2] // b, xs[3] // b), self.ttype(x))
        self._from_nhwc(r, d)
        order = np.arange(oc).reshape(b, b, xs[1]).transpose(2, 0, 1).reshape(-1)
        self._op("GATHER", [d, self._i32("channel_order", order)], [out], axis=1, batch_dims=0)

    def _op_CumSum(self, node, a):
        x = self.value(node.input[0])
        if self.ttype(x) not in ("FLOAT32", "INT32", "INT64"):
            raise _Unsupported(f"input of type {self.ttype(x)} (CUMSUM: FLOAT32, INT32, INT64)")
        axis = np.asarray(self.need_const(node.input[1], "axis")).reshape(-1)
        if axis.size != 1:
            raise _Unsupported(f"axis holds {axis.size} values, not one")
        axis = self.axes([int(axis[0])], len(self.shape(x)))[0]
        self._op("CUMSUM", [x, self._const("axis", np.array(axis, np.int32), "INT32")],
                 [self.out(node, type=self.ttype(x))], exclusive=bool(a.get("exclusive", 0)),
                 reverse=bool(a.get("reverse", 0)))

    def _op_Trilu(self, node, a):
        """The kept triangle of the last two axes: SELECT_V2 of a constant BOOL mask [rows, cols]."""
        x = self.value(node.input[0])
        xs = self.shape(x)
        if len(xs) < 2:
            raise _Unsupported(f"input of rank {len(xs)} (at least 2)")
        k = 0
        if len(node.input) > 1 and node.input[1]:
            k = int(np.asarray(self.need_const(node.input[1], "k")).reshape(-1)[0])
        ones = np.ones(xs[-2:], bool)
        mask = np.triu(ones, k) if int(a.get("upper", 1)) else np.tril(ones, k)
        zero = self._const("zero", np.zeros((), _NP_OF.get(self.ttype(x), np.float32)), self.ttype(x))
        self._select(self._const("mask", mask, "BOOL"), x, zero, "trilu", out=self.out(node, type=self.ttype(x)))

    def _scatter(self, node, x: int, indices, updates: int):
        """data with the update slices written at ``indices`` (int32 [..., K], a constant array or a run-time
        tensor): SCATTER_ND of the updates into zeros, and SELECT_V2 of the slots written (a constant mask, or one
        scattered from ones at run time) between that and the data."""
        xs = self.shape(x)
        shape = self._i32("shape", list(xs))
        if isinstance(indices, np.ndarray):
            idx_t = self._i32("indices", indices)
            k = indices.shape[-1]
            mask = np.zeros(xs[:k], bool)
            mask[tuple(indices.reshape(-1, k).T)] = True
            mask_t = self._const("written", mask.reshape(xs[:k] + (1,) * (len(xs) - k)), "BOOL")
        else:
            idx_t = indices
            ones = self._const("ones", np.ones(self.shape(updates), bool), "BOOL")
            mask_t = self._tmp("written", xs, "BOOL")
            self._op("SCATTER_ND", [idx_t, ones, shape], [mask_t])
        scattered = self._tmp("scattered", xs, self.ttype(x))
        self._op("SCATTER_ND", [idx_t, updates, shape], [scattered])
        self._select(mask_t, scattered, x, "scatter", out=self.out(node, type=self.ttype(x)))

    def _op_ScatterND(self, node, a):
        if a.get("reduction", "none") != "none":
            raise _Unsupported(f"reduction '{a['reduction']}' (only 'none')")
        x, updates = self.value(node.input[0]), self.value(node.input[2])
        if self.ttype(x) != self.ttype(updates):
            raise _Unsupported(f"data and updates types differ ({self.ttype(x)}, {self.ttype(updates)})")
        xs = self.shape(x)
        idx = self.const(node.input[1])
        if idx is not None:
            idx = np.asarray(idx, np.int64)
            k = idx.shape[-1]
            bounds = np.array(xs[:k])
            idx = np.where(idx < 0, idx + bounds, idx)
            if idx.size and (idx.min() < 0 or np.any(idx >= bounds)):
                raise _Unsupported("an index outside the data")
            if len({tuple(r) for r in idx.reshape(-1, k)}) != idx.reshape(-1, k).shape[0]:
                raise _Unsupported("repeated indices (ONNX leaves the result undefined)")
            self._scatter(node, x, idx.astype(np.int32), updates)
            return
        it = self.value(node.input[1])
        if self.ttype(it) == "INT64":
            it = self.unary("CAST", it, "indices32", out=self._tmp("indices32", self.shape(it), "INT32"),
                            in_data_type="INT64", out_data_type="INT32")
        elif self.ttype(it) != "INT32":
            raise _Unsupported(f"indices of type {self.ttype(it)}")
        self.notes.append(f"ScatterND '{self.node_name}': run-time indices must lie in 0..dim-1 and not repeat "
                          "(negative indices are not wrapped)")
        self._scatter(node, x, it, updates)

    def _op_ScatterElements(self, node, a):
        """Constant indices: every update's full coordinate is known, so it is a ScatterND of the updates (one
        index vector per element)."""
        if a.get("reduction", "none") != "none":
            raise _Unsupported(f"reduction '{a['reduction']}' (only 'none')")
        x, updates = self.value(node.input[0]), self.value(node.input[2])
        xs = self.shape(x)
        idx = self.const(node.input[1])
        axis = self.axes([a.get("axis", 0)], len(xs))[0]
        if idx is None:
            return self._scatter_elements_runtime(node, x, xs, axis, updates)
        idx = np.asarray(idx, np.int64)
        idx = np.where(idx < 0, idx + xs[axis], idx)
        if idx.ndim != len(xs) or (idx.size and (idx.min() < 0 or idx.max() >= xs[axis])):
            raise _Unsupported(f"indices {idx.shape} / values outside the data {xs}")
        coords = list(np.indices(idx.shape))
        coords[axis] = idx
        full = np.stack(coords, axis=-1).reshape(idx.shape + (len(xs),))
        if len({tuple(r) for r in full.reshape(-1, len(xs))}) != idx.size:
            raise _Unsupported("repeated indices (ONNX leaves the result undefined)")
        self._scatter(node, x, full.astype(np.int32), updates)

    def _scatter_elements_runtime(self, node, x: int, xs: tuple, axis: int, updates: int):
        """Run-time indices [d0, ..., dr-1]: each element's full coordinate is its own position with the axis
        coordinate replaced by its index -- a PACK of constant position grids and the (int32) indices -- then the
        ScatterND of the updates."""
        it = self.value(node.input[1])
        js = tuple(self.shape(it))
        if self.ttype(it) not in ("INT32", "INT64") or len(js) != len(xs) or len(js) > 5:
            raise _Unsupported(f"indices {js} of type {self.ttype(it)} for data {xs} (INT32 / INT64, same rank, "
                               "at most 5)")
        if self.ttype(it) == "INT64":
            it = self.unary("CAST", it, "indices32", out=self._tmp("indices32", js, "INT32"),
                            in_data_type="INT64", out_data_type="INT32")
        grids = np.indices(js).astype(np.int32)
        parts = [it if d == axis else self._i32(f"grid{d}", grids[d]) for d in range(len(xs))]
        coords = self._tmp("coordinates", js + (len(xs),), "INT32")
        self._op("PACK", parts, [coords], values_count=len(xs), axis=len(js))
        self.notes.append(f"ScatterElements '{self.node_name}': run-time indices must lie in 0..{xs[axis] - 1} and "
                          "not repeat (negative indices are not wrapped)")
        self._scatter(node, x, coords, updates)

    _op_Scatter = _op_ScatterElements  # opset 9-10's name for it

    def _op_GatherND(self, node, a):
        """GATHER_ND; batch_dims b > 0 as b leading coordinates (each index vector's own batch position, a
        constant grid) put before the index vectors."""
        x = self.value(node.input[0])
        xs = self.shape(x)
        b = int(a.get("batch_dims", 0))
        idx = self.const(node.input[1])
        js = tuple(np.shape(idx)) if idx is not None else tuple(self.shape(self.value(node.input[1])))
        grid = np.stack(np.indices(js[:-1])[:b], axis=-1).astype(np.int32) if b else None  # [..., b]
        if idx is not None:
            idx = np.asarray(idx, np.int64)
            bounds = np.array(xs[b:b + idx.shape[-1]])
            idx = np.where(idx < 0, idx + bounds, idx)
            it = self._i32("indices", idx if grid is None else np.concatenate([grid, idx], axis=-1))
        else:
            it = self.value(node.input[1])
            if b:
                if self.ttype(it) == "INT64":
                    it = self.unary("CAST", it, "indices32", out=self._tmp("indices32", js, "INT32"),
                                    in_data_type="INT64", out_data_type="INT32")
                full = self._tmp("batched_indices", js[:-1] + (b + js[-1],), self.ttype(it))
                self._op("CONCATENATION", [self._i32("batch_grid", grid), it], [full], axis=len(js) - 1,
                         fused_activation_function="NONE")
                it = full
        self._op("GATHER_ND", [x, it], [self.out(node, type=self.ttype(x))])

    def _op_OneHot(self, node, a):
        """ONE_HOT with a constant depth and [off, on] values; negative indices wrap (FLOOR_MOD by the depth),
        as ONNX does for indices in [-depth, depth - 1]."""
        it = self.value(node.input[0])
        if self.ttype(it) not in ("INT32", "INT64"):
            raise _Unsupported(f"indices of type {self.ttype(it)} (INT32, INT64)")
        depth = int(np.asarray(self.need_const(node.input[1], "depth")).reshape(-1)[0])
        values = np.asarray(self.need_const(node.input[2], "values")).reshape(-1)
        rank = len(self.shape(it))
        axis = int(a.get("axis", -1))
        axis = axis + rank + 1 if axis < 0 else axis
        out = self.out(node)
        ot = self.ttype(out)
        dt = _NP_OF.get(ot)
        if dt is None:
            raise _Unsupported(f"values of type {ot}")
        wrapped = self.binary("FLOOR_MOD", it, self._const("depth_wrap", np.array(depth, _NP_OF[self.ttype(it)]),
                                                           self.ttype(it)), "wrapped")
        self._op("ONE_HOT", [wrapped, self._const("depth", np.array(depth, np.int32), "INT32"),
                             self._const("on", np.array(values[1], dt), ot),
                             self._const("off", np.array(values[0], dt), ot)], [out], axis=axis)

    def _op_ReverseSequence(self, node, a):
        """Constant sequence_lens: each (batch, time) element's source is known, so one GATHER_ND of constant
        [time, batch] (or [batch, time]) coordinates: the first lens[b] steps of batch b reversed, the rest kept."""
        x = self.value(node.input[0])
        xs = self.shape(x)
        lens = np.asarray(self.need_const(node.input[1], "sequence_lens"), np.int64).reshape(-1)
        t_axis, b_axis = int(a.get("time_axis", 0)), int(a.get("batch_axis", 1))
        if sorted((t_axis, b_axis)) != [0, 1] or len(xs) < 2 or lens.size != xs[b_axis]:
            raise _Unsupported(f"time_axis {t_axis} / batch_axis {b_axis} / {lens.size} lengths for input {xs}")
        steps = xs[t_axis]
        lens = np.clip(lens, 0, steps)
        t = np.arange(steps)[:, None]
        src = np.where(t < lens[None, :], lens[None, :] - 1 - t, t)  # [time, batch]
        batch = np.broadcast_to(np.arange(lens.size)[None, :], src.shape)
        coords = np.stack([src, batch], axis=-1) if t_axis == 0 else np.stack([batch.T, src.T], axis=-1)
        self._op("GATHER_ND", [x, self._i32("coordinates", coords)], [self.out(node, type=self.ttype(x))])

    def _op_CenterCropPad(self, node, a):
        """A constant target shape: a centred STRIDED_SLICE on the axes that shrink, then a PAD (zeros, the extra
        one after) on those that grow."""
        x = self.value(node.input[0])
        xs = self.shape(x)
        target = [int(v) for v in np.asarray(self.need_const(node.input[1], "shape")).reshape(-1)]
        axes = self.axes(a.get("axes", list(range(len(target)))), len(xs))
        if len(axes) != len(target):
            raise _Unsupported(f"{len(target)} sizes for {len(axes)} axes")
        want = list(xs)
        for ax, n in zip(axes, target):
            want[ax] = n
        out = self.out(node, type=self.ttype(x))
        begin = [max((d - w) // 2, 0) for d, w in zip(xs, want)]
        kept = [min(d, w) for d, w in zip(xs, want)]
        pads = [[max((w - d) // 2, 0), max(w - d - (w - d) // 2, 0)] for d, w in zip(xs, want)]
        grow = any(p for pr in pads for p in pr)
        t = x
        if tuple(kept) != tuple(xs):
            t = out if not grow else self._tmp("cropped", tuple(kept), self.ttype(x))
            self._op("STRIDED_SLICE", [x, self._i32("begin", begin), self._i32("end", [b + k for b, k in
                                                                                       zip(begin, kept)]),
                                       self._i32("strides", [1] * len(xs))], [t])
        if grow:
            self._op("PAD", [t, self._i32("paddings", pads)], [out])
        elif t != out:
            self.reshape(t, self.shape(out), out=out)

    def _op_Compress(self, node, a):
        """A constant condition selects fixed positions: one GATHER of them (along the axis, or of the flattened
        input without one)."""
        x = self.value(node.input[0])
        cond = self.const(node.input[1])
        if cond is None:
            raise _Unsupported("a condition computed at run time (the output's length would depend on the data)")
        keep = np.flatnonzero(np.asarray(cond).reshape(-1)).astype(np.int32)
        if a.get("axis") is None:
            x = self.reshape(x, (int(np.prod(self.shape(x), dtype=np.int64)),), "flat")
            axis = 0
        else:
            axis = self.axes([a["axis"]], len(self.shape(x)))[0]
        self._op("GATHER", [x, self._i32("kept", keep)], [self.out(node, type=self.ttype(x))], axis=axis, batch_dims=0)

    # ------------------------------------------------------------------ DFT / STFT (audio front ends)
    # A DFT of constant length is a matrix product: each output bin's (real, imag) pair is a weighted sum of the
    # input samples with cos / sin weights. One FULLY_CONNECTED with constant weights [2 * bins, samples
    # (x2 for a complex input)] gives the bins interleaved (re, im), which is ONNX's [..., bins, 2] after a
    # RESHAPE. Unlike RFFT2D (power-of-two lengths, a COMPLEX64 result) this takes any length, onesided or not,
    # inverse, a window folded into the weights, and quantizes to int8 like any FULLY_CONNECTED.
    def _dft_matmul(self, x: int, rows: int, samples: int, complex_in: bool, n: int, bins: int, inverse: bool,
                    window, suffix: str) -> int:
        """x [rows, samples * (2 if complex_in)] -> [rows, 2 * bins]: bins 0..bins-1 of the n-point DFT of
        each row (zero-padded / truncated to n samples, times ``window`` [samples] if given)."""
        t = np.arange(samples)
        k = np.arange(bins)
        angle = (2 * np.pi / n) * np.outer(k, t)  # [bins, samples]
        sign = 1.0 if inverse else -1.0
        cos, sin = np.cos(angle), sign * np.sin(angle)
        live = (t < n).astype(np.float64) * (np.ones(samples) if window is None else np.asarray(window, np.float64))
        cos, sin = cos * live, sin * live
        scale = 1.0 / n if inverse else 1.0
        if complex_in:  # (xr + i xi)(cos + i sin): re = xr cos - xi sin, im = xr sin + xi cos; samples interleaved
            re = np.stack([cos, -sin], axis=-1).reshape(bins, 2 * samples)
            im = np.stack([sin, cos], axis=-1).reshape(bins, 2 * samples)
        else:
            re, im = cos, sin
        w = (np.stack([re, im], axis=1).reshape(2 * bins, -1) * scale).astype(np.float32)
        out = self._tmp(suffix, (rows, 2 * bins))
        self._op("FULLY_CONNECTED", [x, self._f32("dft_weights", w), -1], [out], fused_activation_function="NONE",
                 keep_num_dims=False)
        return out

    def _op_DFT(self, node, a):
        """input [..., N, 1 | 2] (real | complex), the DFT along ``axis`` (TRANSPOSEd next to the last when it is
        not there): [..., bins, 2]; dft_length (a constant) zero-pads or truncates the signal."""
        x = self.float_input(node)
        xs = self.shape(x)
        rank = len(xs)
        if rank < 2 or xs[-1] not in (1, 2):
            raise _Unsupported(f"input {xs}: the last dim must be 1 (real) or 2 (complex)")
        if self.opset >= 20:
            axis = -2
            if len(node.input) > 2 and node.input[2]:
                axis = int(np.asarray(self.need_const(node.input[2], "axis")).reshape(-1)[0])
        else:
            axis = int(a.get("axis", 1))
        axis = self.axes([axis], rank)[0]
        if axis == rank - 1:
            raise _Unsupported("the DFT axis is the last (real / imaginary) one")
        samples = xs[axis]
        n = samples
        if len(node.input) > 1 and node.input[1]:
            n = int(np.asarray(self.need_const(node.input[1], "dft_length")).reshape(-1)[0])
        inverse, onesided = bool(a.get("inverse", 0)), bool(a.get("onesided", 0))
        if onesided and xs[-1] == 2:
            raise _Unsupported("onesided=1 on a complex input")
        bins = n // 2 + 1 if onesided else n
        out = self.out(node)
        t = x
        perm = list(range(rank))
        if axis != rank - 2:
            perm[axis], perm[rank - 2] = rank - 2, axis
            t = self.transpose(x, perm, "axis_to_end")
        ts = self.shape(t)
        rows = int(np.prod(ts[:-2], dtype=np.int64))
        flat = self.reshape(t, (rows, samples * xs[-1]), "rows")
        y = self._dft_matmul(flat, rows, samples, xs[-1] == 2, n, bins, inverse, None, "dft")
        if axis == rank - 2:
            self.reshape(y, self.shape(out), out=out)
            return
        y = self.reshape(y, ts[:-2] + (bins, 2), "bins")
        self.transpose(y, perm, "axis_back", out=out)

    def _op_STFT(self, node, a):
        """signal [B, L, 1 | 2] -> [B, frames, bins, 2]: the frames (frame_length samples every frame_step) by one
        GATHER of constant positions, the window folded into the DFT weights, one FULLY_CONNECTED."""
        x = self.float_input(node)
        xs = self.shape(x)
        if len(xs) != 3 or xs[-1] not in (1, 2):
            raise _Unsupported(f"signal {xs} (expected [batch, length, 1 | 2])")
        step = int(np.asarray(self.need_const(node.input[1], "frame_step")).reshape(-1)[0])
        window = None
        if len(node.input) > 2 and node.input[2]:
            window = np.asarray(self.need_const(node.input[2], "window"), np.float64).reshape(-1)
        if len(node.input) > 3 and node.input[3]:
            length = int(np.asarray(self.need_const(node.input[3], "frame_length")).reshape(-1)[0])
        elif window is not None:
            length = window.size
        else:
            raise _Unsupported("neither a window nor a frame_length")
        if window is not None and window.size != length:
            raise _Unsupported(f"a window of {window.size} samples for frames of {length}")
        complex_in = xs[-1] == 2
        onesided = bool(a.get("onesided", 1))
        if onesided and complex_in:
            raise _Unsupported("onesided=1 on a complex signal")
        if step < 1 or length > xs[1]:
            raise _Unsupported(f"frame_step {step} / frame_length {length} for a signal of {xs[1]} samples")
        frames = 1 + (xs[1] - length) // step
        bins = length // 2 + 1 if onesided else length
        positions = (np.arange(frames)[:, None] * step + np.arange(length)[None, :]).astype(np.int32)
        sig = self.reshape(x, (xs[0], xs[1], xs[2]), "signal")
        framed = self._tmp("frames", (xs[0], frames, length, xs[2]))
        self._op("GATHER", [sig, self._i32("frame_positions", positions)], [framed], axis=1, batch_dims=0)
        rows = xs[0] * frames
        flat = self.reshape(framed, (rows, length * xs[2]), "rows")
        y = self._dft_matmul(flat, rows, length, complex_in, length, bins, False, window, "stft")
        out = self.out(node)
        self.reshape(y, self.shape(out), out=out)


# Recurrent ops: the inputs whose leading axis is num_directions. Weights (sliced at import, constants) and initial
# states (sliced by a Slice node: constant or run-time).
_RECURRENT_WEIGHTS = {"LSTM": (1, 2, 3, 7), "GRU": (1, 2, 3), "RNN": (1, 2, 3)}
_RECURRENT_STATES = {"LSTM": (5, 6), "GRU": (5,), "RNN": (5,)}
_RECURRENT_ACTIVATIONS = {"LSTM": 3, "GRU": 2, "RNN": 1}


def _split_recurrent_directions(graph):
    """A bidirectional or reverse LSTM / GRU / RNN with constant weights becomes forward ones: the reverse
    direction runs forward on the input reversed in time (a Slice of step -1) and its Y is reversed back; the directions' Y / Y_h / Y_c are concatenated on the num_directions axis. The
    forward handlers (a TFLite sequence op, or unrolled) then take each, and refuse a sequence_lens shorter than
    the sequence as before (reversing in time is right for full-length sequences only). A node whose weights are
    not constants stays as it is (and is refused naming its direction)."""
    from onnx import helper, numpy_helper

    if not any(n.op_type in _RECURRENT_WEIGHTS and n.domain in ("", "ai.onnx") and any(
            at.name == "direction" and at.s != b"forward" for at in n.attribute) for n in graph.node):
        return
    consts = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
    for n in graph.node:
        if n.op_type == "Constant" and n.attribute and n.attribute[0].name == "value":
            consts[n.output[0]] = numpy_helper.to_array(n.attribute[0].t)
    taken = {v for n in graph.node for v in list(n.input) + list(n.output)} | set(consts)
    taken |= {i.name for i in graph.input} | {o.name for o in graph.output}

    def fresh(base: str) -> str:
        name, k = base, 1
        while name in taken:
            name, k = f"{base}_{k}", k + 1
        taken.add(name)
        return name

    def const(base: str, value) -> str:
        name = fresh(base)
        graph.initializer.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    out_nodes = []
    for node in graph.node:
        a = _attrs(node)
        direction = a.get("direction", "forward")
        if node.op_type not in _RECURRENT_WEIGHTS or node.domain not in ("", "ai.onnx") or direction == "forward":
            out_nodes.append(node)
            continue
        inputs = list(node.input)
        weights = [i for i in _RECURRENT_WEIGHTS[node.op_type] if i < len(inputs) and inputs[i]]
        seq_axis = 1 if int(a.get("layout", 0)) else 0
        if any(inputs[i] not in consts for i in weights):
            out_nodes.append(node)
            continue
        label = node.name or f"{node.op_type}_{node.output[0]}"
        dirs = ["forward", "reverse"] if direction == "bidirectional" else ["reverse"]
        n_act = _RECURRENT_ACTIVATIONS[node.op_type]
        acts = a.get("activations")
        results = []  # per direction: its (Y, Y_h, Y_c) names ('' when the node does not give that output)
        for d, way in enumerate(dirs):
            ins = list(inputs)
            for i in weights:
                ins[i] = const(f"{label}/{way}/w{i}", consts[inputs[i]][d:d + 1])
            for i in _RECURRENT_STATES[node.op_type]:
                if i < len(ins) and ins[i]:
                    sliced = fresh(f"{label}/{way}/state{i}")
                    state_axis = 1 if seq_axis else 0
                    out_nodes.append(helper.make_node(
                        "Slice", [ins[i], const(f"{label}/{way}/s", [d]), const(f"{label}/{way}/e", [d + 1]),
                                  const(f"{label}/{way}/ax", [state_axis])], [sliced]))
                    ins[i] = sliced
            if way == "reverse":
                rev = fresh(f"{label}/reverse/x")
                out_nodes.append(helper.make_node(
                    "Slice", [inputs[0], const(f"{label}/rs", [-1]), const(f"{label}/re", [-2 ** 62]),
                              const(f"{label}/rax", [seq_axis]), const(f"{label}/rst", [-1])], [rev]))
                ins[0] = rev
            outs = [fresh(f"{label}/{way}/out{k}") if k < len(node.output) and node.output[k] else ""
                    for k in range(3 if node.op_type == "LSTM" else 2)]
            attrs = {k: v for k, v in a.items() if k not in ("direction", "activations", "activation_alpha",
                                                              "activation_beta")}
            for key in ("activations", "activation_alpha", "activation_beta"):
                if a.get(key):
                    half = a[key][d * n_act:(d + 1) * n_act] if len(a[key]) >= len(dirs) * n_act else a[key]
                    attrs[key] = half
            out_nodes.append(helper.make_node(node.op_type, ins, outs, name=f"{label}/{way}", direction="forward",
                                              **attrs))
            if way == "reverse" and outs[0]:
                back = fresh(f"{label}/reverse/y")
                out_nodes.append(helper.make_node(
                    "Slice", [outs[0], const(f"{label}/ys", [-1]), const(f"{label}/ye", [-2 ** 62]),
                              const(f"{label}/yax", [seq_axis]), const(f"{label}/yst", [-1])], [back]))
                outs[0] = back
            results.append(outs)
        # num_directions axis: Y [seq, dirs, batch, h] (layout 1: [batch, seq, dirs, h]); Y_h / Y_c [dirs, batch,
        # h] (layout 1: [batch, dirs, h])
        for k, name in enumerate(node.output[:len(results[0])]):
            if not name:
                continue
            axis = (2 if seq_axis else 1) if k == 0 else (1 if seq_axis else 0)
            parts = [r[k] for r in results]
            if len(parts) == 1:
                out_nodes.append(helper.make_node("Identity", parts, [name]))
            else:
                out_nodes.append(helper.make_node("Concat", parts, [name], axis=axis))
    del graph.node[:]
    graph.node.extend(out_nodes)


_SEQUENCE_OPS = ("SequenceConstruct", "SequenceEmpty", "SequenceInsert", "SequenceErase", "SplitToSequence",
                 "SequenceAt", "SequenceLength", "ConcatFromSequence")


def _resolve_static_sequences(proto, opset: int):
    """ONNX sequences whose length and positions are known at convert time (torch.onnx's ``torch.cat`` / ``stack``
    of a list, ``split`` / ``unbind`` into a list) become plain tensors: a sequence is tracked as the list of its
    tensors' names through SequenceConstruct / SequenceEmpty / SequenceInsert / SequenceErase (constant positions)
    and SplitToSequence (a Split; its pieces' count from a constant split or the input's inferred shape), and its
    readers become Identity (SequenceAt of a constant position), a constant (SequenceLength) or Concat
    (ConcatFromSequence; new_axis=1 over Unsqueezed tensors). A sequence op whose sequence cannot be tracked so
    stays (and is refused: ONNX sequences have no TFLite form)."""
    from onnx import helper, numpy_helper, shape_inference

    graph = proto.graph
    if not any(n.op_type in _SEQUENCE_OPS and n.domain in ("", "ai.onnx") for n in graph.node):
        return
    consts = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
    for n in graph.node:
        if n.op_type == "Constant" and n.attribute and n.attribute[0].name == "value":
            consts[n.output[0]] = numpy_helper.to_array(n.attribute[0].t)
    try:
        inferred = shape_inference.infer_shapes(proto)
        shapes = {vi.name: [d.dim_value if d.HasField("dim_value") else None for d in vi.type.tensor_type.shape.dim]
                  for vi in list(inferred.graph.value_info) + list(inferred.graph.input)
                  if vi.type.HasField("tensor_type") and vi.type.tensor_type.HasField("shape")}
    except Exception:  # noqa: BLE001 -- without shapes only constant splits resolve
        shapes = {}
    taken = {v for n in graph.node for v in list(n.input) + list(n.output)} | set(consts)
    counter = [0]

    def fresh(base: str) -> str:
        while True:
            counter[0] += 1
            name = f"{base}/seq{counter[0]}"
            if name not in taken:
                taken.add(name)
                return name

    def const_int(name: str, default=None):
        if not name:
            return default
        v = consts.get(name)
        return None if v is None else int(np.asarray(v).reshape(-1)[0])

    seqs: dict[str, list[str]] = {}
    out_nodes = []
    for node in graph.node:
        op, a = node.op_type, _attrs(node)
        ins = list(node.input)
        new = None
        if node.domain not in ("", "ai.onnx") or op not in _SEQUENCE_OPS:
            out_nodes.append(node)
            continue
        if op == "SequenceConstruct":
            seqs[node.output[0]] = list(ins)
            new = []
        elif op == "SequenceEmpty":
            seqs[node.output[0]] = []
            new = []
        elif op in ("SequenceInsert", "SequenceErase") and ins[0] in seqs:
            items = list(seqs[ins[0]])
            pos = const_int(ins[2] if op == "SequenceInsert" and len(ins) > 2 else
                            ins[1] if op == "SequenceErase" and len(ins) > 1 else "",
                            len(items) if op == "SequenceInsert" else -1)
            if pos is not None:
                if op == "SequenceInsert":
                    items.insert(pos if pos >= 0 else len(items) + pos, ins[1])
                else:
                    del items[pos]
                seqs[node.output[0]] = items
                new = []
        elif op == "SplitToSequence":
            axis = int(a.get("axis", 0))
            given = len(ins) > 1 and bool(ins[1])  # a split input, constant or known only at run time
            split = consts.get(ins[1]) if given else None
            shape = shapes.get(ins[0])
            length = shape[axis] if shape and -len(shape) <= axis < len(shape) else None
            if split is not None and np.ndim(split) == 1:
                sizes = [int(v) for v in np.asarray(split).reshape(-1)]
            elif length is not None and (not given or (split is not None and np.ndim(split) == 0)):
                step = 1 if split is None else int(split)
                sizes = [min(step, length - k) for k in range(0, length, step)]
            else:
                sizes = None
            if sizes is not None:
                pieces = [fresh(node.output[0]) for _ in sizes]
                sizes_name = fresh(f"{node.output[0]}/sizes")
                new = [helper.make_node("Constant", [], [sizes_name],
                                        value=numpy_helper.from_array(np.array(sizes, np.int64)))]
                new.append(helper.make_node("Split", [ins[0], sizes_name], pieces, axis=axis) if opset >= 13 else
                           helper.make_node("Split", [ins[0]], pieces, axis=axis, split=sizes))
                if split is None and not int(a.get("keepdims", 1)):
                    squeezed = [fresh(node.output[0]) for _ in pieces]
                    for p, q in zip(pieces, squeezed):
                        axes_name = fresh(f"{node.output[0]}/axes")
                        if opset >= 13:
                            new.append(helper.make_node("Constant", [], [axes_name],
                                                        value=numpy_helper.from_array(np.array([axis], np.int64))))
                            new.append(helper.make_node("Squeeze", [p, axes_name], [q]))
                        else:
                            new.append(helper.make_node("Squeeze", [p], [q], axes=[axis]))
                    pieces = squeezed
                seqs[node.output[0]] = pieces
        elif op == "SequenceAt" and ins[0] in seqs:
            pos = const_int(ins[1])
            if pos is not None and -len(seqs[ins[0]]) <= pos < len(seqs[ins[0]]):
                new = [helper.make_node("Identity", [seqs[ins[0]][pos]], [node.output[0]])]
        elif op == "SequenceLength" and ins[0] in seqs:
            new = [helper.make_node("Constant", [], [node.output[0]],
                                    value=numpy_helper.from_array(np.array(len(seqs[ins[0]]), np.int64)))]
        elif op == "ConcatFromSequence" and ins[0] in seqs and seqs[ins[0]]:
            items, axis = seqs[ins[0]], int(a["axis"])
            if int(a.get("new_axis", 0)):
                lifted = []
                for t in items:
                    u = fresh(node.output[0])
                    if opset >= 13:
                        axes_name = fresh(f"{node.output[0]}/axes")
                        new_nodes = [helper.make_node("Constant", [], [axes_name],
                                                      value=numpy_helper.from_array(np.array([axis], np.int64))),
                                     helper.make_node("Unsqueeze", [t, axes_name], [u])]
                    else:
                        new_nodes = [helper.make_node("Unsqueeze", [t], [u], axes=[axis])]
                    out_nodes.extend(new_nodes)
                    lifted.append(u)
                items = lifted
            new = [helper.make_node("Concat", items, [node.output[0]], axis=axis)]
        if new is None:
            out_nodes.append(node)  # not trackable: stays, and is refused
        else:
            out_nodes.extend(new)
    read = {o.name for o in graph.output}
    for n in out_nodes:
        read.update(n.input)
        for sub in _node_graphs(n):
            read |= _referenced(sub)
    if read & set(seqs):
        return  # a sequence still read as one (a graph output, a Loop, an op not tracked): the graph stays as it was
    del graph.node[:]
    graph.node.extend(out_nodes)


def _no_mapping(op_type: str) -> str:
    """Why an ONNX op without a handler reached emission (its inputs did not fold, or it is refused)."""
    if op_type in FOLDED_OPS:
        return f"evaluated at convert time only, and it could not be: {FOLDED_OPS[op_type]}"
    if op_type in REFUSED_OPS:
        return f"no mapping to TFLite builtins: {REFUSED_OPS[op_type]}"
    if op_type in REWRITTEN_OPS:
        return f"not in a form the importer rewrites: {REWRITTEN_OPS[op_type]}"
    return "no mapping to TFLite builtins for this op"


def _node_graphs(node) -> list:
    """The subgraphs a node carries (If branches, a Loop / Scan body)."""
    from onnx import AttributeProto

    out = []
    for a in node.attribute:
        if a.type == AttributeProto.GRAPH:
            out.append(a.g)
        elif a.type == AttributeProto.GRAPHS:
            out.extend(a.graphs)
    return out


def _dataflow(graph) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """(sources, flows) over ``graph`` and every subgraph in it: value -> the values it is computed from, value ->
    the values computed from it. A node's outputs come from its inputs; an If branch's output k flows into the If's
    output k, a Loop body's output 1 + k into the Loop's output k (carried values, then scan outputs), a Scan body's
    output k into the Scan's output k; a subgraph reads outer values by their names, so its nodes link to them."""
    sources: dict[str, list[str]] = {}
    flows: dict[str, list[str]] = {}

    def link(src: str, dst: str):
        if src and dst:
            sources.setdefault(dst, []).append(src)
            flows.setdefault(src, []).append(dst)

    def visit(g):
        for node in g.node:
            outs = [o for o in node.output if o]
            for i in node.input:
                for o in outs:
                    link(i, o)
            for sub in _node_graphs(node):
                visit(sub)
                body_outs = [o.name for o in sub.output]
                if node.op_type == "Loop":
                    body_outs = body_outs[1:]  # the condition
                for b, o in zip(body_outs, node.output):
                    link(b, o)

    visit(graph)
    return sources, flows


def _referenced(graph) -> set[str]:
    """Every value name a node reads or a graph gives as an output, in ``graph`` and its subgraphs."""
    names = {o.name for o in graph.output}
    for node in graph.node:
        names.update(i for i in node.input if i)
        for sub in _node_graphs(node):
            names |= _referenced(sub)
    return names


# TFLite type -> the ONNX element type (a subgraph input's type as the ONNX handlers look it up)
_TFLITE_TO_ONNX = {"FLOAT32": 1, "UINT8": 2, "INT8": 3, "INT16": 5, "INT32": 6, "INT64": 7, "BOOL": 9, "UINT16": 4,
                   "UINT32": 12}


def _pinned_summary(array: np.ndarray):
    """A pinned value for notes: the value (a scalar or up to 8 elements), else its fill or its shape."""
    if array.size <= 8:
        return array.tolist()
    first = array.reshape(-1)[0].item()
    if np.all(array == first):
        return f"{first} (every element of {list(array.shape)})"
    return f"an array of shape {list(array.shape)}"


def _parse_number(text: str, dtype: np.dtype):
    low = text.lower()
    if dtype == np.bool_ and low in ("true", "false"):
        return low == "true"
    if dtype.kind == "f":
        return float(text)
    try:
        return int(text, 16) if low.lstrip("+-").startswith("0x") else int(text)
    except ValueError:
        return float(text)  # "16000.0": checked to be whole below


def _pinned_value(name: str, value, vi) -> np.ndarray:
    """``value`` for graph input ``vi`` (ValueInfoProto) as an array of its element type and shape."""
    from onnx import helper

    tt = vi.type.tensor_type
    if not vi.type.HasField("tensor_type") or tt.elem_type not in _ONNX_TYPES:
        raise SettingError(f"{PIN_FLAG}: input '{name}' is not a numeric tensor; it cannot be pinned")
    dtype = np.dtype(helper.tensor_dtype_to_np_dtype(tt.elem_type))
    what = repr(value)
    if isinstance(value, str):
        tokens = [t.strip() for t in value.replace(";", ",").split(",") if t.strip()]
        try:
            parsed = [_parse_number(t, dtype) for t in tokens]
        except ValueError:
            raise SettingError(f"{PIN_FLAG}: input '{name}' ({dtype.name}): {what} is not a "
                                  f"{'number' if dtype.kind != 'b' else 'boolean'} or a comma-separated list of them"
                                  ) from None
        value = parsed[0] if len(parsed) == 1 else parsed
    try:
        raw = np.asarray(value)
    except (TypeError, ValueError):
        raise SettingError(f"{PIN_FLAG}: input '{name}': {what} is not a number or an array") from None
    if raw.dtype == object and all(isinstance(v, int) for v in raw.reshape(-1)):
        raise SettingError(f"{PIN_FLAG}: input '{name}' is {dtype.name}; {what} is out of its range")
    if raw.dtype.kind not in "biuf" or raw.size == 0:
        raise SettingError(f"{PIN_FLAG}: input '{name}': {what} is not a number or an array of numbers")
    if dtype.kind in "iub" and raw.dtype.kind == "f" and not np.all(np.isfinite(raw) & (raw == np.round(raw))):
        raise SettingError(f"{PIN_FLAG}: input '{name}' is {dtype.name}; {what} is not a whole number")
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        if raw.min() < info.min or raw.max() > info.max:
            raise SettingError(f"{PIN_FLAG}: input '{name}' is {dtype.name}; {what} is out of its range")
    array = raw.astype(dtype)
    if not tt.HasField("shape"):
        return array
    dims = [d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else None for d in tt.shape.dim]
    shown = "[" + ", ".join(_dim_text(d) for d in tt.shape.dim) + "]"
    if all(d is not None for d in dims):
        if tuple(array.shape) != tuple(dims) and array.ndim == 0:
            return np.full(dims, array, dtype)  # a scalar fills the declared shape
        if tuple(array.shape) != tuple(dims):
            if array.size != int(np.prod(dims, dtype=np.int64)) or array.ndim > 1:
                raise SettingError(f"{PIN_FLAG}: input '{name}' is {shown}; a value of shape "
                                      f"{list(array.shape)} does not fit it")
            array = array.reshape(dims)
        return array
    if array.size == 1 and array.ndim < len(dims) and all(d in (None, 1) for d in dims):
        array = array.reshape([1] * len(dims))  # a scalar for [N] / [1, N]: one element each
    if array.ndim != len(dims) or any(d is not None and d != g for d, g in zip(dims, array.shape)):
        raise SettingError(f"{PIN_FLAG}: input '{name}' is {shown}; a value of shape {list(array.shape)} does "
                              "not fit it (give an array of that rank, static dims kept)")
    return array


def _np_type(dtype) -> str:
    from edge_sdk.model.types import TENSOR_TYPES

    for name, (_, dt) in TENSOR_TYPES.items():
        if dt == dtype and name not in ("RESOURCE", "INT4", "INT2", "UINT4"):
            return name
    raise _Unsupported(f"constant of dtype {dtype}")


def _onnx_nearest(n_in, n_out, scale, ctm, nearest_mode) -> np.ndarray:
    x = np.arange(n_out, dtype=np.float64)
    if ctm == "half_pixel":
        src = (x + 0.5) / scale - 0.5
    elif ctm == "pytorch_half_pixel":
        src = (x + 0.5) / scale - 0.5 if n_out > 1 else np.zeros_like(x)
    elif ctm == "align_corners":
        src = x * (n_in - 1) / (n_out - 1) if n_out > 1 else np.zeros_like(x)
    elif ctm == "asymmetric":
        src = x / scale
    elif ctm == "tf_half_pixel_for_nn":
        src = (x + 0.5) / scale
    else:
        raise _Unsupported(f"coordinate_transformation_mode '{ctm}'")
    if nearest_mode == "round_prefer_floor":
        idx = np.where(src - np.floor(src) == 0.5, np.floor(src), np.round(src))
    elif nearest_mode == "round_prefer_ceil":
        idx = np.floor(src + 0.5)
    elif nearest_mode == "floor":
        idx = np.floor(src)
    elif nearest_mode == "ceil":
        idx = np.ceil(src)
    else:
        raise _Unsupported(f"nearest_mode '{nearest_mode}'")
    return np.clip(idx, 0, n_in - 1).astype(np.int64)


def _tflite_nearest(n_in, n_out, align, hpc) -> np.ndarray:
    f = np.float32
    scale = f(n_in - 1) / f(n_out - 1) if align and n_out > 1 else f(n_in) / f(n_out)
    x = np.arange(n_out).astype(np.float32)
    v = (x + f(0.5 if hpc else 0.0)) * scale
    idx = np.sign(v) * np.floor(np.abs(v) + 0.5) if align else np.floor(v)
    idx = np.minimum(idx.astype(np.int64), n_in - 1)
    return np.maximum(idx, 0) if hpc else idx
