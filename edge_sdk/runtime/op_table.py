"""The one op table: a row of data per op that everything needing op knowledge reads.

`edge inspect` (MACs), the interpreter's prepare step (kernel, versions), `edge check`, `edge flash`'s kernel
selection and the README's ops table all read these rows. Each row has both runtimes' sides: the Python
interpreter's (``kernel``, ``max_version``, ``dtypes``) and the C runtime's (``c_max_version``, ``c_file``,
``c_dtypes``, ``c_constraints``), the latter from ``op_table_c.C_KERNELS`` / ``C_TYPES``, generated from the C
kernels' own ``EDGE_KERNEL(OP, name, max_version, "TYPES", "constraints")`` registrations by
``firmware_c/tools/gen_ops.py --python`` (tests/test_op_table_c.py fails when the two disagree). ``C_ONLY`` lists
ops only the C runtime has (none today). ``runtime_refusal(runtime, op, version, dtype)`` says why a runtime has
no kernel for an op, or none for that tensor type (None when it has one). The dtypes are those of the tensor the
op computes on (``node_data_type``: the first non-handle input unless the C registration names another input),
the same convention as the device profiles' op lists. Adding an op: its kernel in ``edge_sdk/runtime/kernels/<module>.py``, its row here,
its test against a peer.

Every per-op fact is a field of the op's row (the graph facts below: family, effects, in-place and patch rules,
weights, quantization, ...) and nowhere else (tests/test_op_lists.py): Python reads ``row(name).<fact>``; the C
runtime reads the facts it needs from firmware_c/include/edge_op_facts.h, generated from these rows by
``firmware_c/tools/gen_ops.py --facts`` (``make tables``; tests/test_op_facts.py fails when it is stale).

``kernel`` and ``macs`` name functions as "module:function" inside ``edge_sdk.runtime.kernels``; they are imported
only when a model uses the op, so a missing kernel is an UnsupportedOpError at allocate time, never at import.
"""

from __future__ import annotations

import importlib
import math
from dataclasses import dataclass

from edge_sdk.errors import UnsupportedOpError
from edge_sdk.runtime.op_table_c import C_KERNELS, C_TYPES, TYPE_SWITCHES

HANDLE_TYPES = ("RESOURCE", "VARIANT")  # tensors that carry a handle, not data
NO_DTYPE = "NONE"  # the dtype of a node without any data tensor (VAR_HANDLE, CALL_ONCE)


# The values a row's graph facts take (tests/test_op_facts.py holds every row to them).
FAMILIES = ("", "conv", "pool", "reduce", "pad", "reshape", "unary", "binary", "last_axis")
EFFECTS = ("", "state", "calls")
INPLACE_RULES = ("", "same", "pad", "depthwise", "unary", "binary")
PATCH_RULES = ("", "window", "pad", "elementwise")
QUANT_RULES = ("", "own", "shared", "fixed", "index", "compare", "logical", "select", "calls")  # and "same:<input>"
INT16_RULES = ("", "op", "pass", "none")
AXIS_RULES = ("", "input", "output")
AFFINE_RULES = ("", "scale", "add", "subtract")
PAD_FOLD_RULES = ("", "pad", "conv")
TRANSPOSE_SINK_RULES = ("", "pad", "split", "axis", "per_tensor")
IDENTITY_RULES = ("", "always", "perm", "one_input", "zero_pads", "slice", "strided_slice", "same_quant")
SPEED_RUNTIMES = ("litert", "c")  # a row's speed facts: LiteRT's CPU kernels (XNNPACK on), edge-sdk's C runtime
SPEED_DTYPES = ("float32", "int8", "int16")  # ... per type the op computes in ("int16": int16x8)


@dataclass(frozen=True)
class OpRow:
    name: str  # builtin schema name, or a custom op's custom_code
    kernel: str | None  # "module:prepare_function"; None: an op known by its facts only, no kernel here
    max_version: int  # highest op version our kernel runs (TFLite's op versioning)
    macs: str | None = None  # "module:function(node) -> int", counted after prepare
    custom: bool = False  # a custom op (matched by custom_code)
    # --- graph facts: what the planner, the converter and its passes, check and profile know of the op ---
    # family: how output elements relate to input elements. "unary": element i of the output from element i of
    # input 0; "binary": from element i of each input, broadcast (comparisons, logical ops and SELECT too);
    # "reduce" over axes given by input 1; "last_axis": along the last axis (SOFTMAX); "reshape": the same values
    # in another shape (RESHAPE, SQUEEZE, EXPAND_DIMS); "conv" / "pool": a spatial window; "pad": PAD and kin.
    family: str = ""
    # effects: "state" (reads or writes resource variables) or "calls" (runs other subgraphs): never dead, never
    # computed ahead of time, a delegate boundary; "" for a pure op.
    effects: str = ""
    subgraphs: tuple[str, ...] = ()  # the option fields that name the subgraphs a "calls" op runs
    # inplace: the least-RAM plan's rule for letting output 0 take over an input's bytes. "same": the same bytes
    # (RESHAPE); "pad": written back to front over input 0 (PAD); "depthwise": int8, channels in == out, channel
    # by channel; "unary": elementwise over input 0; "binary": elementwise over input 0, else input 1, of the
    # output's element count and size. "": never in place.
    inplace: str = ""
    # patch: how a patch stage (MCUNetV2) runs the op on windows: "window" (a spatial window: its receptive field
    # grows the halo), "pad" (a shift of the window), "elementwise" (as it is); "": the op ends a stage.
    patch: str = ""
    weights: tuple[int, int | None, int | None] | None = None  # (weights input, bias input, output-channel axis)
    dynamic: tuple[int | None, int] | None = None  # dynamic-range quantization: (weights' channel axis, op version)
    # quant: how the integer graph quantizes the op's float outputs. "same:N": output keeps data input N's
    # quantization; "shared": inputs and output share one; "own": its own calibrated range; "fixed": the range in
    # quant_fixed; "index": outputs are not activations (indices, shapes; copied); "compare" / "logical" /
    # "select": the comparison, logical and selection rules; "calls": IF / WHILE, values in and out at the scales
    # shared with their subgraphs; "": not quantizable (weighted layers: ``weights``).
    quant: str = ""
    quant_fixed: tuple[tuple[str, float, int], ...] = ()  # ((activation type, scale, zero point), ...)
    # int16: "op": TFLM and the interpreter have an int16-activation kernel (int16x8 widening may pick it); "pass":
    # shape-only, carries an int16 tensor between widened ops; "none": no int16 kernel anywhere
    int16: str = ""
    int16_missing: tuple[str, ...] = ()  # runtimes ("python", "c") without the int16 kernel of an "op" row
    int16_int8_inputs: tuple[int, ...] = ()  # inputs kept int8 when the op runs int16 (PRELU's alpha, as TFLM reads)
    q_versions: tuple[int | None, int | None] = (None, None)  # op version of the quantized op: int8, int16
    join: bool = False  # joins parts under one scale (CONCATENATION, PACK): a part may be crushed
    moves_values: bool = False  # values unchanged, only their positions (RESHAPE, TRANSPOSE, ...)
    random: bool = False  # draws random numbers: never computed ahead of time
    # shape_only: output 0 depends on the input's shape, not its values (SHAPE, RANK): known at prepare, so the
    # shape arithmetic after it is too (shape_arithmetic.know_at_prepare)
    shape_only: bool = False
    # params: the inputs whose values the op's prepare reads (axes, sizes, paddings, shapes, counts): a tensor there
    # must be known at prepare (a constant, or computed from constants and shapes: Node.constant_values). The C
    # kernels read them from constants, so a model where one is computed from constants alone gets the Python
    # prepare's values as constants in the bytes the C runtime loads (edge_sdk.runtime.c_loaded.needs_prepare).
    # Not RESHAPE's shape nor TRANSPOSE_CONV's output_shape: both runtimes take those at run time, checked against
    # the declared output at every invoke.
    params: tuple[int, ...] = ()
    # distribution: output 0 is a probability distribution (or its log) over the last axis (SOFTMAX, LOG_SOFTMAX):
    # the quantizer's accuracy guard compares its argmax beside its SNR
    distribution: bool = False
    # axis: the op joins or splits whole slices along its "axis" option, counted in the dims of input 0 ("input":
    # CONCATENATION, UNPACK) or of output 0 ("output": PACK); "": no such option
    axis: str = ""
    # fused_activation: the op applies its fused_activation_function option in TFLM's kernels (a RELU / RELU6 /
    # RELU_N1_TO_1 after it may fold into it; the ONNX importer writes the option as NONE)
    fused_activation: bool = False
    # activation_range: the op is the fused activation of its own name (an ActivationFunctionType value): the
    # [lo, hi] it clamps float values to (RELU (0, inf), RELU6 (0, 6), RELU_N1_TO_1 (-1, 1)); None otherwise
    activation_range: tuple[float, float] | None = None
    # options: the schema's builtin options table where it is not named after the op ("<CamelCase>Options":
    # writer.options_for), e.g. "Pool2DOptions" for the pools; "" when named after the op or when it has none
    options: str = ""
    # affine: the op with a constant operand c is an affine map of its data input x: "scale" (x * c, MUL), "add"
    # (x + c, ADD), "subtract" (x - c with c second, SUB); a per-channel one folds into the weights and bias of the
    # weighted layer before it (converters.passes.batchnorm)
    affine: str = ""
    # data_sized: the outputs whose size depends on the input values (WHERE, UNIQUE): the interpreter sizes them at
    # eval, outside the arena (interpreter.DataSizedOutput); the C runtime, which plans every byte before the first
    # invoke, refuses the op (c_refusal)
    data_sized: tuple[int, ...] = ()
    # divisor: the input the op divides by. LiteRT's int8 kernel refuses at invoke a divisor element equal to its
    # zero point (div.cc), so the quantizer keeps the op float where that input's range comes within half a
    # quantum of zero (converters.quantize.rules.zero_divisors); None: the op divides by nothing
    divisor: int | None = None
    # homogeneous: f(s * x) = s * f(x) for every positive per-channel s (RELU, PRELU, LEAKY_RELU): cross-layer
    # equalization may scale channels through the op (converters.passes.equalize)
    homogeneous: bool = False
    # in_channel_axis: the weights' input-channel axis of a weighted op whose input channels cross-layer
    # equalization may scale through its weights (CONV_2D; DEPTHWISE_CONV_2D with one output channel per input
    # channel: the axis is its output-channel axis too); None otherwise
    in_channel_axis: int | None = None
    # uint8: the op runs legacy asymmetric UINT8 tensors (TFLite v1 "quantized_uint8" models) in both runtimes:
    # its uint8 arithmetic is the int8 arithmetic on (q - zero point), so the interpreters present such tensors to
    # its int8 kernel as INT8 with zero points - 128 (edge_sdk.runtime.uint8); False: a UINT8 tensor it touches
    # stays UINT8 and its kernel answers for it
    uint8: bool = False
    # pad_fold: the op's role when an explicit PAD folds into the window op that reads it (planner.folded_pads; the
    # C runtime's edge_pad_folds reads the same column): "pad": a PAD whose output may be skipped; "conv": a window
    # op that reads the PAD's input with the PAD's H / W padding added to its own (its padding taps are the PAD's
    # fill: float 0.0, int8 the input zero point). "": neither. The pools are not "conv": MAX_POOL_2D's padding
    # taps are skipped (not 0) and AVERAGE_POOL_2D divides by the taps inside the input, so a PAD's fill counts.
    pad_fold: str = ""
    # identity: when the op copies input 0 to its one output unchanged (same shape and type), so the identity pass
    # (converters.passes.identity) bypasses it: "always" (RESHAPE and kin, CAST), "perm" (the identity
    # permutation), "one_input" (a single input), "zero_pads" (all-zero paddings), "slice" / "strided_slice" (all
    # begins 0; STRIDED_SLICE: unit strides, no masks or offset), "same_quant" (output quantized as the input);
    # "": never
    identity: str = ""
    # transpose_sink: how the layout pass moves a TRANSPOSE feeding the op below it (converters.passes.layout) beyond
    # its family's rule (unary / last_axis / reduce / binary): "pad": the paddings permuted (PAD, PADV2; MIRROR_PAD
    # keeps its TRANSPOSE above); "split": the split axis permuted, each part transposed; "axis": as a binary op,
    # with the axis option permuted (CONCATENATION); "per_tensor": its family's rule, only with per-tensor
    # quantization on input 0 and output (QUANTIZE, DEQUANTIZE); "": the family's rule alone
    transpose_sink: str = ""
    # speed: ((runtime, dtype, cost), ...): the op's time per unit on a runtime family (SPEED_RUNTIMES) when it
    # computes in dtype (SPEED_DTYPES), in MAC-equivalents of that runtime's float32 CONV_2D; the unit is a MAC for a
    # weighted row with a MACs function, an output element otherwise (QUANTIZE / DEQUANTIZE: under the integer type
    # they convert to or from). Measured on one-op models, one thread, by benchmarks/widen_cost.py (which prints
    # these values); read by converters.quantize.speed: the float-first widening of ops whose int8 kernel is slower
    # than float32 and the estimate of a written model's time against its float source. () : not measured
    speed: tuple[tuple[str, str, float], ...] = ()

    @property
    def runs(self) -> bool:
        """Whether the interpreter has a kernel for the op (else the row holds its graph facts only)."""
        return self.kernel is not None

    @property
    def c_max_version(self) -> int | None:
        """Highest op version the C runtime (firmware_c) runs; None when it has no kernel for the op."""
        entry = C_KERNELS.get(self.name)
        return entry[0] if entry else None

    @property
    def c_file(self) -> str | None:
        """The firmware_c/src/kernels file holding the C kernel."""
        entry = C_KERNELS.get(self.name)
        return entry[1] if entry else None

    @property
    def in_c(self) -> bool:
        return self.name in C_KERNELS

    @property
    def dtypes(self) -> tuple[str, ...]:
        """The tensor types the Python interpreter's kernel takes (of ``node_data_type``); legacy UINT8 tensors
        besides these where ``uint8`` says so (runtime.uint8 presents them as INT8: ``takes_uint8``)."""
        return PY_DTYPES.get(self.name) or C_TYPES.get(self.name, ((), -1, ""))[0]

    @property
    def c_dtypes(self) -> tuple[str, ...] | None:
        """The tensor types the C kernel's prepare takes (its EDGE_KERNEL line; "INT16/INT8": data type / weights
        type); None without a C kernel."""
        entry = C_TYPES.get(self.name)
        return entry[0] if entry else None

    @property
    def c_constraints(self) -> str:
        """The C kernel's key constraints, in words (its EDGE_KERNEL line; "" when none are stated)."""
        entry = C_TYPES.get(self.name)
        return entry[2] if entry else ""

    def prepare_function(self):
        return _resolve(self.kernel, self.name)

    def macs_function(self):
        return _resolve(self.macs, self.name) if self.macs else None


def _resolve(ref: str, op: str):
    module, function = ref.split(":")
    try:
        return getattr(importlib.import_module(f"edge_sdk.runtime.kernels.{module}"), function)
    except (ImportError, AttributeError) as exc:
        raise UnsupportedOpError(f"{op}: no kernel in this build ({ref}: {exc})") from None


def _rows(*rows: OpRow) -> dict[str, OpRow]:
    return {r.name: r for r in rows}


# fmt: off
ROWS: dict[str, OpRow] = _rows(
    # convolution and matrix products
    OpRow("CONV_2D",                      "conv:prepare_conv_2d",             8, "conv:macs_conv_2d",
          family='conv', patch='window', weights=(1, 2, 0), dynamic=(0, 5), int16='op', q_versions=(3, 4),
          fused_activation=True, in_channel_axis=3, uint8=True, pad_fold='conv',
          speed=(('c', 'float32', 1), ('c', 'int16', 59.4), ('c', 'int8', 0.45),
                 ('litert', 'float32', 1), ('litert', 'int16', 53.8), ('litert', 'int8', 0.491))),
    OpRow("DEPTHWISE_CONV_2D",            "conv:prepare_depthwise_conv_2d",   7, "conv:macs_depthwise_conv_2d",
          family='conv', inplace='depthwise', patch='window', weights=(1, 2, 3), dynamic=(3, 6), int16='op',
          q_versions=(3, 5), fused_activation=True, in_channel_axis=3, uint8=True, pad_fold='conv',
          speed=(('c', 'float32', 3.12), ('c', 'int16', 94.2), ('c', 'int8', 5.15),
                 ('litert', 'float32', 3.01), ('litert', 'int16', 132), ('litert', 'int8', 4.74))),
    OpRow("FULLY_CONNECTED",              "conv:prepare_fully_connected",    14, "conv:macs_fully_connected",
          weights=(1, 2, 0), dynamic=(None, 9), int16='op', q_versions=(4, 7), fused_activation=True, uint8=True,
          speed=(('c', 'float32', 3.13), ('c', 'int16', 35.1), ('c', 'int8', 0.74),
                 ('litert', 'float32', 3.18), ('litert', 'int16', 25.7), ('litert', 'int8', 0.718))),
    OpRow("TRANSPOSE_CONV",               "conv:prepare_transpose_conv",      5, "conv:macs_transpose_conv",
          family='conv', weights=(1, 3, 0), int16='op', q_versions=(3, 3), fused_activation=True),
    OpRow("BATCH_MATMUL",                 "conv:prepare_batch_matmul",        4, "conv:macs_batch_matmul",
          weights=(1, None, None), quant='own', int16='op', q_versions=(2, 3)),
    OpRow("AVERAGE_POOL_2D",              "pooling:prepare_average_pool_2d",  3,
          family='pool', patch='window', quant='same:0', int16='op', q_versions=(2, 3),
          fused_activation=True, options='Pool2DOptions', uint8=True),
    OpRow("MAX_POOL_2D",                  "pooling:prepare_max_pool_2d",      3,
          family='pool', patch='window', quant='same:0', int16='op', q_versions=(2, 3),
          fused_activation=True, options='Pool2DOptions', uint8=True,
          speed=(('c', 'float32', 20.4), ('c', 'int16', 190), ('c', 'int8', 12.1),
                 ('litert', 'float32', 31.3), ('litert', 'int16', 589), ('litert', 'int8', 10.9))),
    OpRow("L2_POOL_2D",                   "pooling:prepare_l2_pool_2d",       1,
          family='pool', fused_activation=True, options='Pool2DOptions'),
    # element-wise arithmetic
    OpRow("ADD",                          "elementwise:prepare_add",          6,
          family='binary', inplace='binary', patch='elementwise', quant='own', int16='op', q_versions=(2, 3),
          fused_activation=True, affine='add', uint8=True,
          speed=(('c', 'float32', 11.5), ('c', 'int16', 312), ('c', 'int8', 30.4),
                 ('litert', 'float32', 12.9), ('litert', 'int16', 138), ('litert', 'int8', 12.4))),
    OpRow("SUB",                          "elementwise:prepare_sub",          5,
          family='binary', inplace='binary', patch='elementwise', quant='own', int16='op', q_versions=(2, 3),
          fused_activation=True, affine='subtract', uint8=True),
    OpRow("MUL",                          "elementwise:prepare_mul",          8,
          family='binary', inplace='binary', patch='elementwise', quant='own', int16='op', q_versions=(2, 4),
          fused_activation=True, affine='scale', uint8=True),
    # DIV int16: both runtimes run LiteRT's Div<int16_t> (TFLM has none: int16 'none' keeps widening off it)
    OpRow("DIV",                          "elementwise:prepare_div",          2,
          family='binary', quant='own', int16='none', q_versions=(1, None), fused_activation=True, divisor=1, uint8=True),
    OpRow("SQUARED_DIFFERENCE",           "elementwise:prepare_squared_difference", 2,
          family='binary', quant='own', int16='op', q_versions=(2, None)),
    OpRow("MAXIMUM",                      "elementwise:prepare_maximum",      4,
          family='binary', quant='shared', int16='op', q_versions=(2, 4), options='MaximumMinimumOptions', uint8=True),
    OpRow("MINIMUM",                      "elementwise:prepare_minimum",      4,
          family='binary', quant='shared', int16='op', q_versions=(2, 4), options='MaximumMinimumOptions', uint8=True),
    OpRow("RSQRT",                        "elementwise:prepare_rsqrt",        3,
          family='unary', quant='own', int16='op', q_versions=(2, 3)),
    # EXP / LOG also run INT8 (256-entry table) and INT16 (zero points 0, the interpolated 513-entry table) as
    # LiteRT's exp.cc / elementwise.cc; TFLM has neither on integers: not quantized by the converter (LOG also
    # meets log(0) = -inf on silent calibration frames, a range no int8 output holds)
    OpRow("EXP",                          "math:prepare_exp",                 2,
          family='unary'),
    OpRow("LOG",                          "math:prepare_log",                 2,
          family='unary'),
    # SQRT: float, and INT16 (zero points 0) as LiteRT's elementwise.cc (truncated float32 quotient; TFLM has no
    # integer SQRT): not quantized by the converter, kept float with exclude
    OpRow("SQRT",                         "math:prepare_sqrt",                2,
          family='unary'),
    # ABS: INT8 / INT16 as elementwise.cc AbsEvalQuantized (|x - zp_in| requantized to the output's scale), in
    # LiteRT, TFLM and both runtimes here: int8 with its own range (version 2)
    OpRow("ABS",                          "math:prepare_abs",                 5,
          family='unary', quant='own', int16='none', q_versions=(2, None)),
    # NEG on INT8 / INT16: LiteRT's reference Negate negates the stored values (wrapping) and ignores the zero
    # point and scales; both runtimes copy that exactly (the real result is -x only with zero points of 0): not
    # quantized, since an int8 activation's zero point is seldom 0
    OpRow("NEG",                          "math:prepare_neg",                 1,
          family='unary'),
    OpRow("POW",                          "math:prepare_pow",                 1,
          family='binary'),
    # LiteRT's elementwise float builtins (LiteRT has no int8 kernel of any: not quantizable)
    OpRow("SQUARE",                       "math:prepare_square",        1,
          family='unary'),
    OpRow("FLOOR",                        "math:prepare_floor",        1,
          family='unary'),
    OpRow("CEIL",                         "math:prepare_ceil",        1,
          family='unary'),
    OpRow("ROUND",                        "math:prepare_round",        1,
          family='unary'),
    OpRow("SIN",                          "math:prepare_sin",        2,
          family='unary'),
    OpRow("COS",                          "math:prepare_cos",        2,
          family='unary'),
    OpRow("SIGN",                         "math:prepare_sign",        2,
          family='unary'),
    # LiteRT's two-input elementwise math beyond ADD / SUB / MUL / DIV (integers as plain integers), and ADD_N
    OpRow("FLOOR_DIV",                    "binary_math:prepare_floor_div",  3,
          family='binary'),
    OpRow("FLOOR_MOD",                    "binary_math:prepare_floor_mod",  2,
          family='binary'),
    OpRow("ATAN2",                        "binary_math:prepare_atan2",  1,
          family='binary'),
    OpRow("BITWISE_XOR",                  "binary_math:prepare_bitwise_xor",  1,
          family='binary'),
    OpRow("RIGHT_SHIFT",                  "binary_math:prepare_right_shift",  1,
          family='binary'),
    OpRow("ADD_N",                        "binary_math:prepare_add_n",        1),
    OpRow("TILE",                         "math:prepare_tile",                3, params=(1,)),
    OpRow("BROADCAST_TO",                 "math:prepare_broadcast_to",        4, params=(1,)),
    # MIRROR_PAD moves values (reflected edges): int8 keeps its input's quantization as PAD does (LiteRT, TFLM and
    # both runtimes run it on INT8, version 2)
    OpRow("MIRROR_PAD",                   "math:prepare_mirror_pad",          3,
          family='pad', quant='same:0', int16='none', q_versions=(2, None), identity='zero_pads', params=(1,)),
    # comparisons, logical ops and selection (BOOL tensors)
    OpRow("EQUAL",                        "compare:prepare_equal",            5,
          family='binary', quant='compare', q_versions=(2, None), uint8=True),
    OpRow("NOT_EQUAL",                    "compare:prepare_not_equal",        4,
          family='binary', quant='compare', q_versions=(2, None), uint8=True),
    OpRow("LESS",                         "compare:prepare_less",             3,
          family='binary', quant='compare', q_versions=(2, 3), uint8=True),
    OpRow("LESS_EQUAL",                   "compare:prepare_less_equal",       2,
          family='binary', quant='compare', q_versions=(2, None), uint8=True),
    OpRow("GREATER",                      "compare:prepare_greater",          2,
          family='binary', quant='compare', q_versions=(2, None), uint8=True),
    OpRow("GREATER_EQUAL",                "compare:prepare_greater_equal",    3,
          family='binary', quant='compare', q_versions=(2, 3), uint8=True),
    OpRow("LOGICAL_AND",                  "compare:prepare_logical_and",      1,
          family='binary', quant='logical'),
    OpRow("LOGICAL_OR",                   "compare:prepare_logical_or",       1,
          family='binary', quant='logical'),
    OpRow("LOGICAL_NOT",                  "compare:prepare_logical_not",      1,
          family='unary', quant='logical'),
    OpRow("SELECT",                       "compare:prepare_select",           4,
          family='binary', quant='select', q_versions=(2, None)),
    OpRow("SELECT_V2",                    "compare:prepare_select_v2",        2,
          family='binary', quant='select'),
    # activations
    OpRow("SOFTMAX",                      "activations:prepare_softmax",      4,
          family='last_axis', quant='fixed',
          quant_fixed=(('INT8', 0.00390625, -128), ('INT16', 3.0517578125e-05, 0), ('UINT8', 0.00390625, 0)), int16='op',
          q_versions=(2, 3), distribution=True, uint8=True),
    OpRow("LOG_SOFTMAX",                  "activations:prepare_log_softmax",  2,
          family='last_axis', quant='fixed', quant_fixed=(('INT8', 0.0625, 127),), int16='none', q_versions=(2, None),
          distribution=True),
    OpRow("LOGISTIC",                     "activations:prepare_logistic",     3,
          family='unary', inplace='unary', patch='elementwise', quant='fixed',
          quant_fixed=(('INT8', 0.00390625, -128), ('INT16', 3.0517578125e-05, 0), ('UINT8', 0.00390625, 0)),
          int16='op', q_versions=(2, 3), uint8=True),
    OpRow("TANH",                         "activations:prepare_tanh",         3,
          family='unary', inplace='unary', patch='elementwise', quant='fixed',
          quant_fixed=(('INT8', 0.0078125, 0), ('INT16', 3.0517578125e-05, 0), ('UINT8', 0.0078125, 128)),
          int16='op', q_versions=(2, 3), uint8=True),
    OpRow("RELU",                         "activations:prepare_relu",         3,
          family='unary', inplace='unary', patch='elementwise', quant='own', int16='op', q_versions=(2, 3),
          activation_range=(0.0, math.inf), homogeneous=True, uint8=True),
    OpRow("RELU6",                        "activations:prepare_relu6",        3,
          family='unary', inplace='unary', patch='elementwise', quant='own', int16='op', q_versions=(2, 3),
          activation_range=(0.0, 6.0), uint8=True),
    OpRow("RELU_N1_TO_1",                 "activations:prepare_relu_n1_to_1", 2,
          family='unary', inplace='unary', patch='elementwise', quant='own', activation_range=(-1.0, 1.0), uint8=True),
    OpRow("RELU_0_TO_1",                  "activations:prepare_relu_0_to_1",  1,
          family='unary', quant='own', int16='none', q_versions=(1, None)),
    OpRow("ELU",                          "activations:prepare_elu",          1,
          family='unary', quant='own', int16='none', q_versions=(1, None)),
    OpRow("HARD_SWISH",                   "activations:prepare_hard_swish",   2,
          family='unary', inplace='unary', patch='elementwise', quant='own', int16='none', q_versions=(1, None), uint8=True),
    OpRow("LEAKY_RELU",                   "activations:prepare_leaky_relu",   2,
          family='unary', inplace='unary', patch='elementwise', quant='own', int16='op', q_versions=(2, 2),
          homogeneous=True, uint8=True),
    # int16: TFLM's int16 PRELU reads int8 alpha (kernels/prelu.cc); LiteRT's and both edge-sdk runtimes agree
    OpRow("PRELU",                        "activations:prepare_prelu",        2,
          family='binary', quant='own', int16='op', int16_int8_inputs=(1,), q_versions=(1, 1), homogeneous=True,
          speed=(('c', 'float32', 8.18), ('c', 'int16', 168), ('c', 'int8', 40.8),
                 ('litert', 'float32', 8.37), ('litert', 'int16', 234), ('litert', 'int8', 234))),
    # GELU (float32; int8 by a 256-entry table, int16 by the interpolated 513-entry table, as LiteRT's): emitted by
    # converters.passes.gelu. int16 'none': TFLM has no GELU, so int16x8 widening does not pick it
    OpRow("GELU",                         "gelu:prepare_gelu",                3,
          family='unary', quant='own', int16='none', q_versions=(2, None), uint8=True),
    # normalization along the last axis
    OpRow("L2_NORMALIZATION",             "normalization:prepare_l2_normalization", 2,
          family='last_axis', quant='fixed', quant_fixed=(('INT8', 0.0078125, 0),), int16='none',
          q_versions=(2, None), options='L2NormOptions'),
    OpRow("LOCAL_RESPONSE_NORMALIZATION", "normalization:prepare_local_response_normalization", 1,
          family='last_axis'),
    # type conversion
    OpRow("QUANTIZE",                     "quantize:prepare_quantize",        6,
          family='unary', inplace='unary', q_versions=(2, 3), uint8=True, identity='same_quant',
          transpose_sink='per_tensor',
          speed=(('c', 'int8', 230), ('litert', 'int8', 4.11))),
    OpRow("DEQUANTIZE",                   "quantize:prepare_dequantize",      9,
          family='unary', q_versions=(2, 4), uint8=True, transpose_sink='per_tensor',
          speed=(('c', 'int8', 34.3), ('litert', 'int8', 5.16))),
    OpRow("CAST",                         "quantize:prepare_cast",            9,
          family='unary', identity='always'),
    OpRow("BITCAST",                      "bitcast:prepare_bitcast",          1),
    OpRow("FAKE_QUANT",                   "fake_quant:prepare_fake_quant",    2,
          family='unary'),
    # shape and data movement
    OpRow("RESHAPE",                      "shape:prepare_reshape",            2,
          family='reshape', inplace='same', quant='same:0', int16='pass', moves_values=True, uint8=True,
          identity='always'),
    OpRow("SQUEEZE",                      "shape:prepare_squeeze",            2,
          family='reshape', quant='same:0', int16='pass', moves_values=True, uint8=True, identity='always'),
    OpRow("EXPAND_DIMS",                  "shape:prepare_expand_dims",        2,
          family='reshape', quant='same:0', int16='pass', moves_values=True, uint8=True, identity='always',
          params=(1,)),
    OpRow("SHAPE",                        "shape:prepare_shape",              2,
          quant='index', shape_only=True),
    OpRow("CONCATENATION",                "shape:prepare_concatenation",      7,
          quant='shared', int16='op', q_versions=(2, 3), join=True, axis='input', uint8=True, identity='one_input',
          transpose_sink='axis'),
    OpRow("PACK",                         "shape:prepare_pack",               5,
          quant='shared', q_versions=(2, 3), join=True, axis='output'),
    OpRow("UNPACK",                       "shape:prepare_unpack",             6,
          quant='same:0', q_versions=(2, 4), axis='input'),
    OpRow("SPLIT",                        "shape:prepare_split",              5,
          quant='same:1', int16='pass', q_versions=(2, 4), transpose_sink='split', params=(0,)),
    OpRow("SPLIT_V",                      "shape:prepare_split_v",            3,
          quant='same:0', int16='pass', q_versions=(2, 2), transpose_sink='split', params=(1, 2)),
    OpRow("TRANSPOSE",                    "shape:prepare_transpose",          9,
          quant='same:0', int16='pass', q_versions=(2, 5), moves_values=True, identity='perm', params=(1,)),
    OpRow("STRIDED_SLICE",                "shape:prepare_strided_slice",      8,
          quant='same:0', int16='pass', q_versions=(2, 4), identity='strided_slice', params=(1, 2, 3)),
    OpRow("SLICE",                        "shape:prepare_slice",              8,
          quant='same:0', q_versions=(2, 4), identity='slice', params=(1, 2)),
    OpRow("PAD",                          "shape:prepare_pad",                6,
          family='pad', inplace='pad', patch='pad', quant='same:0', int16='pass', q_versions=(2, 4), uint8=True,
          pad_fold='pad', identity='zero_pads', transpose_sink='pad', params=(1,),
          speed=(('c', 'float32', 6.56), ('c', 'int16', 4.7), ('c', 'int8', 3.6),
                 ('litert', 'float32', 9.49), ('litert', 'int16', 5.24), ('litert', 'int8', 7.54))),
    OpRow("PADV2",                        "shape:prepare_pad",                6,
          family='pad', inplace='pad', patch='pad', quant='same:0', int16='pass', q_versions=(2, 4), uint8=True,
          pad_fold='pad', identity='zero_pads', transpose_sink='pad', params=(1,)),
    OpRow("GATHER",                       "shape:prepare_gather",             8,
          quant='same:0', q_versions=(2, 2)),
    OpRow("DEPTH_TO_SPACE",               "shape:prepare_depth_to_space",     2,
          quant='same:0', q_versions=(2, None)),
    OpRow("SPACE_TO_DEPTH",               "shape:prepare_space_to_depth",     2,
          quant='same:0', q_versions=(2, None)),
    OpRow("DENSIFY",                      "shape:prepare_densify",            1),
    OpRow("DILATE",                       "dilate:prepare_dilate",            1, params=(1,)),
    # outputs whose values do not come from the data input's values (shapes fixed at prepare: constant operands)
    OpRow("ZEROS_LIKE",                   "fill:prepare_zeros_like",          1,
          family='unary'),
    OpRow("FILL",                         "fill:prepare_fill",                5, params=(0,)),
    OpRow("RANGE",                        "fill:prepare_range",               2, params=(0, 1, 2)),
    OpRow("RANK",                         "fill:prepare_rank",                1,
          quant='index', shape_only=True),
    OpRow("SPACE_TO_BATCH_ND",            "movement:prepare_space_to_batch_nd", 4,
          quant='same:0', q_versions=(2, 4), params=(1, 2)),
    OpRow("BATCH_TO_SPACE_ND",            "movement:prepare_batch_to_space_nd", 4,
          quant='same:0', q_versions=(2, 4), params=(1, 2)),
    OpRow("GATHER_ND",                    "movement:prepare_gather_nd",       6,
          quant='same:0', q_versions=(2, None)),
    OpRow("REVERSE_V2",                   "movement:prepare_reverse_v2",      4,
          quant='same:0', q_versions=(2, 3), moves_values=True, params=(1,)),
    OpRow("ONE_HOT",                      "movement:prepare_one_hot",         1, params=(1,)),
    OpRow("BROADCAST_ARGS",               "movement:prepare_broadcast_args",  1,
          quant='index'),
    OpRow("MATRIX_DIAG",                  "movement:prepare_matrix_diag",     1,
          quant='same:0'),
    OpRow("MATRIX_SET_DIAG",              "movement:prepare_matrix_set_diag", 1,
          quant='shared'),
    OpRow("EMBEDDING_LOOKUP",             "movement:prepare_embedding_lookup", 5,
          quant='same:1'),
    OpRow("REVERSE_SEQUENCE",             "movement:prepare_reverse_sequence", 1,
          quant='same:0', moves_values=True),
    OpRow("SCATTER_ND",                   "movement:prepare_scatter_nd",      1, params=(2,)),
    OpRow("SPARSE_TO_DENSE",              "movement:prepare_sparse_to_dense", 3, params=(1,)),
    # reductions
    OpRow("MEAN",                         "reduce:prepare_mean",              3,
          family='reduce', quant='own', int16='op', q_versions=(2, 3), options='ReducerOptions', uint8=True,
          params=(1,)),
    OpRow("SUM",                          "reduce:prepare_sum",               2,
          family='reduce', quant='own', int16='op', q_versions=(1, 2), options='ReducerOptions', uint8=True,
          params=(1,)),
    OpRow("REDUCE_MAX",                   "reduce:prepare_reduce_max",        3,
          family='reduce', quant='same:0', q_versions=(2, 3), options='ReducerOptions', params=(1,)),
    OpRow("ARG_MAX",                      "reduce:prepare_arg_max",           3,
          quant='index', q_versions=(2, 2), params=(1,)),
    OpRow("REDUCE_MIN",                   "reduce:prepare_reduce_min",        3,
          family='reduce', quant='same:0', q_versions=(2, 3), options='ReducerOptions', params=(1,)),
    OpRow("REDUCE_PROD",                  "reduce:prepare_reduce_prod",       2,
          family='reduce', quant='own', q_versions=(2, 2), options='ReducerOptions', params=(1,)),
    OpRow("REDUCE_ANY",                   "reduce:prepare_reduce_any",        1,
          family='reduce', quant='logical', options='ReducerOptions', params=(1,)),
    OpRow("REDUCE_ALL",                   "reduce:prepare_reduce_all",        1,
          family='reduce', quant='logical', options='ReducerOptions', params=(1,)),
    OpRow("ARG_MIN",                      "reduce:prepare_arg_min",           3,
          quant='index', q_versions=(2, 2), params=(1,)),
    OpRow("CUMSUM",                       "cumsum:prepare_cumsum",            1,
          quant='own', q_versions=(1, None), params=(1,)),
    OpRow("SEGMENT_SUM",                  "segment:prepare_segment_sum",      1, params=(1,)),
    OpRow("UNSORTED_SEGMENT_SUM",         "segment:prepare_unsorted_segment_sum", 1, params=(2,)),
    OpRow("UNSORTED_SEGMENT_PROD",        "segment:prepare_unsorted_segment_prod", 1, params=(2,)),
    OpRow("UNSORTED_SEGMENT_MAX",         "segment:prepare_unsorted_segment_max", 1, params=(2,)),
    OpRow("UNSORTED_SEGMENT_MIN",         "segment:prepare_unsorted_segment_min", 1, params=(2,)),
    # resampling
    OpRow("RESIZE_NEAREST_NEIGHBOR",      "resize:prepare_resize_nearest_neighbor", 4,
          quant='same:0', int16='pass', q_versions=(2, 4), uint8=True, params=(1,)),
    OpRow("RESIZE_BILINEAR",              "resize:prepare_resize_bilinear",   4,
          quant='same:0', q_versions=(2, 4), uint8=True, params=(1,),
          speed=(('c', 'float32', 12.7), ('c', 'int16', 93.4), ('c', 'int8', 15.3),
                 ('litert', 'float32', 20.3), ('litert', 'int16', 141), ('litert', 'int8', 23.4))),
    # sequence models
    OpRow("SVDF",                         "sequence:prepare_svdf",            4, "sequence:macs_svdf",
          weights=(1, None, None)),
    OpRow("UNIDIRECTIONAL_SEQUENCE_LSTM", "sequence:prepare_unidirectional_sequence_lstm", 4, "sequence:macs_unidirectional_sequence_lstm",
          weights=(1, None, None)),
    # state and control flow
    OpRow("VAR_HANDLE",                   "stateful:prepare_var_handle",      1,
          effects='state'),
    OpRow("READ_VARIABLE",                "stateful:prepare_read_variable",   1,
          effects='state'),
    OpRow("ASSIGN_VARIABLE",              "stateful:prepare_assign_variable", 1,
          effects='state'),
    OpRow("CALL_ONCE",                    "stateful:prepare_call_once",       1,
          effects='calls', subgraphs=('init_subgraph_index',)),
    # TFLM's audio front-end ("signal" library) custom ops
    OpRow("SignalWindow",                 "signal:prepare_window",            1, custom=True),
    OpRow("SignalFftAutoScale",           "signal:prepare_fft_auto_scale",    1, custom=True),
    OpRow("SignalRfft",                   "signal:prepare_rfft",              1, custom=True),
    OpRow("SignalEnergy",                 "signal:prepare_energy",            1, custom=True),
    OpRow("SignalFilterBank",             "signal:prepare_filter_bank",       1, custom=True),
    OpRow("SignalFilterBankSquareRoot",   "signal:prepare_filter_bank_square_root", 1, custom=True),
    OpRow("SignalFilterBankSpectralSubtraction", "signal:prepare_filter_bank_spectral_subtraction", 1, custom=True),
    OpRow("SignalPCAN",                   "signal:prepare_pcan",              1, custom=True),
    OpRow("SignalFilterBankLog",          "signal:prepare_filter_bank_log",   1, custom=True),
    # MediaPipe's custom ops (mediapipe/util/tflite/operations)
    OpRow("Convolution2DTransposeBias",   "mediapipe:prepare_transpose_conv_bias", 1, "mediapipe:macs_transpose_conv_bias", custom=True),
    OpRow("TransformTensorBilinear",      "mediapipe:prepare_transform_tensor_bilinear", 2, custom=True),
    OpRow("TransformTensor",              "mediapipe:prepare_transform_tensor_bilinear", 1, custom=True),
    OpRow("TransformLandmarks",           "mediapipe:prepare_transform_landmarks", 2, custom=True),
    OpRow("Landmarks2TransformMatrix",    "mediapipe:prepare_landmarks_to_transform_matrix", 2, custom=True),
    # 3-D convolution, top-k and non-max suppression (LiteRT builtins TFLM lacks; issue 15 point 3)
    OpRow("CONV_3D",                      "conv_3d:prepare_conv_3d",          1, "conv_3d:macs_conv_3d",
          family='conv', weights=(1, None, None)),
    OpRow("TOPK_V2",                      "topk:prepare_topk_v2",             3,
          quant='same:0', q_versions=(2, 3), params=(1,)),
    OpRow("NON_MAX_SUPPRESSION_V4",       "nms:prepare_non_max_suppression_v4", 1, params=(2,)),
    OpRow("NON_MAX_SUPPRESSION_V5",       "nms:prepare_non_max_suppression_v5", 1, params=(2,)),
    # control flow: IF and WHILE with their subgraphs (issue 23 point 2; CALL_ONCE is with the state ops)
    OpRow("IF",                           "control_flow:prepare_if",          1,
          effects='calls', subgraphs=('then_subgraph_index', 'else_subgraph_index'), quant='calls'),
    OpRow("WHILE",                        "control_flow:prepare_while",       1,
          effects='calls', subgraphs=('cond_subgraph_index', 'body_subgraph_index'), quant='calls'),
    # ai-edge-torch's odml.* composites: the decomposition subgraph runs (its index is field 1 of the options)
    OpRow("STABLEHLO_COMPOSITE",          "control_flow:prepare_stablehlo_composite", 1,
          effects='calls', subgraphs=('decomposition_subgraph_index',)),  # quant '': the quantizer runs IF / WHILE only
    # recurrent ops beside the sequence LSTM, the sparse embedding lookup and DYNAMIC_UPDATE_SLICE
    # (issue 23 point 1: rnn.py, lookup.py, dynamic_update_slice.py)
    OpRow("RNN",                          "rnn:prepare_rnn",                  3, "rnn:macs_rnn",
          weights=(1, None, None)),
    OpRow("UNIDIRECTIONAL_SEQUENCE_RNN",  "rnn:prepare_unidirectional_sequence_rnn", 3, "rnn:macs_unidirectional_sequence_rnn",
          weights=(1, None, None), options='SequenceRNNOptions'),
    OpRow("BIDIRECTIONAL_SEQUENCE_RNN",   "rnn:prepare_bidirectional_sequence_rnn", 3, "rnn:macs_bidirectional_sequence_rnn",
          weights=(1, None, None)),
    OpRow("LSTM",                         "rnn:prepare_lstm",                 4, "rnn:macs_lstm",
          weights=(1, None, None)),
    OpRow("BIDIRECTIONAL_SEQUENCE_LSTM",  "rnn:prepare_bidirectional_sequence_lstm", 3, "rnn:macs_bidirectional_sequence_lstm",
          weights=(1, None, None)),
    OpRow("EMBEDDING_LOOKUP_SPARSE",      "lookup:prepare_embedding_lookup_sparse", 1, params=(2,)),
    OpRow("DYNAMIC_UPDATE_SLICE",         "dynamic_update_slice:prepare_dynamic_update_slice", 6),
    # complex, random and the remaining numeric ops (issue 23 point 1): the COMPLEX64 ops, seeded draws (one
    # Philox stream in both runtimes: kernels/random.py), CONV_3D_TRANSPOSE, the builtin REDUCE_WINDOW, ...
    OpRow("RFFT2D",                       "fft:prepare_rfft2d",               1, params=(1,)),
    OpRow("REAL",                         "fft:prepare_real",                 1,
          family='unary'),
    OpRow("IMAG",                         "fft:prepare_imag",                 1,
          family='unary'),
    OpRow("COMPLEX_ABS",                  "fft:prepare_complex_abs",          1,
          family='unary'),
    OpRow("RANDOM_UNIFORM",               "random:prepare_random_uniform",    1,
          random=True, options='RandomOptions', params=(0,)),
    OpRow("RANDOM_STANDARD_NORMAL",       "random:prepare_random_standard_normal", 1,
          random=True, options='RandomOptions', params=(0,)),
    OpRow("MULTINOMIAL",                  "random:prepare_multinomial",       1,
          random=True, options='RandomOptions', params=(1,)),
    OpRow("CONV_3D_TRANSPOSE",            "conv_3d_transpose:prepare_conv_3d_transpose", 1, "conv_3d_transpose:macs_conv_3d_transpose",
          family='conv', options='Conv3DOptions', params=(0,)),
    OpRow("REDUCE_WINDOW",                "reduce_window:prepare_reduce_window", 1, params=(2, 3, 4)),
    OpRow("ONES_LIKE",                    "ones_like:prepare_ones_like",      1, custom=True,
          family='unary'),  # no builtin of schema.fbs: a custom op of that custom_code (LiteRT has no kernel)
    OpRow("BUCKETIZE",                    "bucketize:prepare_bucketize",      1,
          family='unary'),
    # SSD post-processing, the speech front end, WHERE and UNIQUE (issue 23 point 1)
    OpRow("TFLite_Detection_PostProcess", "detection:prepare_tflite_detection_postprocess", 1, custom=True, uint8=True),
    OpRow("AudioSpectrogram",             "audio_features:prepare_audio_spectrogram", 1, custom=True),
    OpRow("Mfcc",                         "audio_features:prepare_mfcc",      1, custom=True),
    OpRow("WHERE",                        "where_unique:prepare_where",       2,
          quant='index', data_sized=(0,)),
    OpRow("UNIQUE",                       "where_unique:prepare_unique",      1,
          data_sized=(0,)),
    # ops whose graph facts the converter and planner know but that have no kernel here yet (lookup refuses them)
    OpRow("CALL", None, 0, effects='calls'),
)
# fmt: on

# The ops the interpreter runs (a row with a kernel); ROWS also holds ops known only by their graph facts.
OPS: dict[str, OpRow] = {name: r for name, r in ROWS.items() if r.kernel is not None}


def row(name: str) -> OpRow:
    """The row of op ``name`` for reading its graph facts; an op the table does not know gets a row with no kernel
    and no facts (every fact at its default: no family, no side effects, not in place, not patchable, ...)."""
    r = ROWS.get(name)
    return r if r is not None else OpRow(name, None, 0)

# Custom ops that need an accelerator: a CPU runtime must refuse them and say which hardware they need.
ACCELERATOR_CUSTOM_OPS: dict[str, str] = {
    "ethos-u": "Arm Ethos-U NPU (a Vela-compiled model)",
    "edgetpu-custom-op": "Coral Edge TPU (an edgetpu_compiler model)",
}


def lookup(name: str, version: int) -> OpRow:
    """The row for an op, or UnsupportedOpError naming what is missing."""
    row = OPS.get(name)
    if row is None:
        if name in ACCELERATOR_CUSTOM_OPS:
            raise UnsupportedOpError(
                f"custom op '{name}' runs only on the {ACCELERATOR_CUSTOM_OPS[name]}; "
                "a CPU interpreter cannot run it: use the model from before that compiler"
            )
        raise UnsupportedOpError(f"op {name} has no kernel here")
    if version > row.max_version:
        raise UnsupportedOpError(f"op {name} version {version} is newer than supported (<= {row.max_version})")
    return row


# The Python interpreter's dtypes where they differ from its C twin's registration (the kernels in
# edge_sdk/runtime/kernels mirror the C ones type for type otherwise: their expect_types lists).
PY_DTYPES: dict[str, tuple[str, ...]] = {
    "RESHAPE": ("FLOAT32", "FLOAT16", "INT8", "UINT8", "INT16", "INT32", "INT64", "BOOL", "UINT32", "UINT16"),
    "SignalRfft": ("INT16", "INT32", "FLOAT32"),
    "WHERE": ("BOOL", "FLOAT32", "INT32", "INT64", "INT8", "UINT8"),  # no C twin (data-sized output)
    "UNIQUE": ("FLOAT32", "INT8", "INT16", "INT32", "INT64", "UINT8"),
}

# Ops the C runtime has a kernel for that the interpreter lacks (a row each would have no Python side).
C_ONLY: tuple[str, ...] = tuple(sorted(set(C_KERNELS) - set(OPS)))

PYTHON, C = "python", "c"


def node_data_type(node, data_input: int = -1) -> str:
    """The dtype an op's types are declared for: input ``data_input`` when >= 0 (and present), else the first
    present input that is not a handle (RESOURCE, VARIANT), else the first such output; NO_DTYPE without any."""
    if 0 <= data_input < len(node.inputs) and node.inputs[data_input] is not None:
        return node.inputs[data_input].type
    for t in (*node.inputs, *node.outputs):
        if t is not None and t.type not in HANDLE_TYPES:
            return t.type
    return NO_DTYPE


def c_data_type(node) -> str:
    """The dtype the C kernel's registration is about: ``node_data_type`` at the input it names (TRANSPOSE_CONV:
    input 2), with "/WEIGHTS" (input 1's type) when the registration lists data/weights pairs."""
    entry = C_TYPES.get(node.op)
    dtype = node_data_type(node, entry[1] if entry else -1)
    if entry and any("/" in t for t in entry[0]) and len(node.inputs) > 1 and node.inputs[1] is not None:
        dtype += "/" + node.inputs[1].type
    return dtype


def takes_dtype(types: tuple[str, ...], dtype: str) -> bool:
    """Whether a row's types take ``dtype``: listed as is, or (a bare data type) as the data part of a listed
    "DATA/WEIGHTS" pair."""
    return dtype in types or ("/" not in dtype and any(t.split("/", 1)[0] == dtype for t in types))


def _legacy_uint8(name: str, dtype: str) -> bool:
    """Whether ``dtype`` is a legacy UINT8 data type (with UINT8 weights, for a weighted op) the op's row takes
    (its ``uint8`` fact: both runtimes present such tensors as INT8, edge_sdk.runtime.uint8)."""
    r = ROWS.get(name)
    return r is not None and r.uint8 and dtype.split("/", 1)[0] == "UINT8" and dtype in ("UINT8", "UINT8/UINT8")


def c_dtype_refusal(name: str, dtype: str) -> str | None:
    """Why the C kernel of ``name`` does not take ``dtype`` ("INT8", or "FLOAT32/INT8" for a data type with its
    weights' type) by its registration's types, or None when it does (or when there is no C kernel:
    ``c_refusal`` says that). A legacy UINT8 type the row takes is taken: every C path loads such a model
    presented as INT8 (edge_sdk.runtime.uint8)."""
    entry = C_TYPES.get(name)
    if entry is None or takes_dtype(entry[0], dtype) or _legacy_uint8(name, dtype):
        return None
    which = f"input {entry[1]}" if entry[1] >= 0 else "data"
    if "/" in dtype:
        which += "/weights"
    return f"the C runtime's {name} kernel does not take {dtype} ({which}; it takes {', '.join(entry[0])})"


def c_refusal(name: str, version: int, dtype: str | None = None) -> str | None:
    """Why the C runtime has no kernel for (op, version) — the test its loader applies to every node before
    preparing any — or, with ``dtype``, none for that type (its registration's types); None when it has one."""
    entry = C_KERNELS.get(name)
    if entry is None:
        if name in ACCELERATOR_CUSTOM_OPS:
            return f"custom op '{name}' runs only on the {ACCELERATOR_CUSTOM_OPS[name]}"
        if row(name).data_sized:
            return (f"the C runtime cannot run {name}: its output size depends on the data (the C runtime plans "
                    "every tensor's bytes before the first invoke)")
        return f"the C runtime has no kernel for {name}"
    if version > entry[0]:
        return f"the C runtime's {name} kernel runs versions up to {entry[0]}, the model has v{version}"
    return c_dtype_refusal(name, dtype) if dtype is not None else None


def runtime_refusal(runtime: str, name: str, version: int, dtype: str | None = None) -> str | None:
    """Why ``runtime`` ("python" or "c") has no kernel for (op, version), or with ``dtype`` none for that tensor
    type (the row's ``dtypes`` / ``c_dtypes``); None when it has one."""
    if runtime == C:
        return c_refusal(name, version, dtype)
    try:
        row = lookup(name, version)
    except UnsupportedOpError as exc:
        return str(exc)
    if dtype is not None and row.dtypes and not takes_dtype(row.dtypes, dtype) and not _legacy_uint8(name, dtype):
        return f"the interpreter's {name} kernel does not take {dtype} (it takes {', '.join(row.dtypes)})"
    return None


def c_type_switches() -> dict[str, str]:
    """The C build's type switches: tensor type name -> macro (-D<macro>=0 compiles that type out)."""
    return dict(TYPE_SWITCHES)


def gen_ops_module():
    """firmware_c/tools/gen_ops.py as a module: the one parser of the C kernels' registrations (``scan``)."""
    import importlib.util

    from edge_sdk import resources

    path = resources.firmware_dir() / "tools" / "gen_ops.py"
    spec = importlib.util.spec_from_file_location("edge_gen_ops", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def c_registrations(folder=None) -> dict[str, int]:
    """{op name (custom code for custom ops): highest version} parsed from a folder of C kernel sources
    (default: this installation's firmware_c/src/kernels) by gen_ops.py's parser; ModelError naming the file
    and line for a malformed registration."""
    from pathlib import Path

    from edge_sdk.errors import ModelError

    gen = gen_ops_module()
    try:
        rows = gen.scan(Path(folder)) if folder is not None else gen.scan()
    except gen.RegistrationError as exc:
        raise ModelError(str(exc)) from None
    return gen.kernel_versions(rows)
