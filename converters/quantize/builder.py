"""The quantized graph under construction (``QuantGraph``): new tensors, buffers, ops and op codes, and the map from
each source tensor to its integer and float copies, with QUANTIZE / DEQUANTIZE inserted where a reader needs the
other one. The rules (``converters.quantize.rules``) say what each op becomes; this module only builds."""

from __future__ import annotations

import numpy as np

from converters.quantize.scales import affine, limits, quantize_array, same_quant
from edge_sdk.errors import ConversionError, ModelError
from edge_sdk.model.schema import BUILTIN_OPERATOR_CODES
from edge_sdk.model.types import Buffer, Model, Operator, OperatorCode, Quantization, SubGraph, Tensor
from edge_sdk.runtime import op_table


def is_float(model: Model, t: int) -> bool:
    return t >= 0 and model.subgraphs[0].tensors[t].type == "FLOAT32"


def is_const(model: Model, t: int) -> bool:
    tensor = model.subgraphs[0].tensors[t]
    return not tensor.is_variable and bool(model.buffers[tensor.buffer].data)


def integer_only(model: Model, op: Operator) -> bool:
    """No float tensor in or out (a CAST of int32 indices, int32 arithmetic on a count): nothing to quantize."""
    return not any(t >= 0 and is_float(model, t) for t in list(op.inputs) + list(op.outputs))


class QuantGraph:
    """The graph being built from ``model`` (subgraph 0) with activations of type ``act`` ("INT8" / "INT16"; the
    float16 and dynamic-range graphs use it too) and the calibrated ``ranges`` (source tensor -> (lo, hi)).
    ``wide16``: ops of a wide join kept in int16 in an int8 model (``converters.quantize.joins``)."""

    def __init__(self, model: Model, act: str, ranges: dict | None = None, wide16=frozenset()):
        self.src = model
        self.sg = model.subgraphs[0]
        self.act = act
        self.ranges = ranges or {}
        self.wide16 = wide16
        self.qmin, self.qmax = (-128, 127) if act == "INT8" else (-32768, 32767)
        self.tensors: list[Tensor] = []
        self.buffers: list[Buffer] = [Buffer()]
        self.ops: list[Operator] = []
        self.codes: list[OperatorCode] = []
        self.qt: dict[int, int] = {}  # source tensor -> its quantized (or non-float) copy
        self.ft: dict[int, int] = {}  # source tensor -> its float copy
        self.origin: dict[int, int] = {}  # new op index -> source op index (None for inserted Q/DQ)
        self.qx: dict[tuple[int, str], int] = {}  # (source tensor, type) -> its copy in the other integer type
        self.io_map: dict[int, int] = {}  # source model input / output -> its new tensor
        # for the report: (SELECT output, constant branch, its min, max) saturated to the run-time range; the
        # comparisons that read float32 inputs (an int8 scale would reach 1)
        self.select_saturated: list[tuple[int, int, float, float]] = []
        self.float_comparisons: list[str] = []

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

    def default_quant(self, t: int, type: str | None = None) -> Quantization:
        """Source tensor t's quantization from its calibrated range (symmetric in int16)."""
        type = type or self.act
        r = self.ranges[t]
        if type == "INT8" and getattr(r, "int8", None) is not None:  # the source's own parameters (a QDQ pair)
            return self.quant(*r.int8)
        lo, hi = r
        return self.quant(*affine(lo, hi, *limits(type), type == "INT16"))

    def non_float(self, t: int) -> int:
        """The copy of a non-float source tensor (int32 parameters, indices, BOOL masks)."""
        if t not in self.qt:
            n = self.copy_tensor(t)
            self.qt[t] = self.ft.setdefault(t, n)
        return self.qt[t]

    def const(self, t: int, quant: Quantization | None = None, type: str | None = None) -> int:
        """A float constant as an activation-typed constant (its own per-tensor params unless given)."""
        type = type or self.act
        data = np.asarray(self.src.tensor_data(0, t), np.float64)
        if quant is None:
            lo, hi = (float(data.min()), float(data.max())) if data.size else (0.0, 0.0)
            quant = self.quant(*affine(lo, hi, *limits(type), type == "INT16"))
        q = quantize_array(data, quant.scale[0], quant.zero_point[0], *limits(type),
                           np.int8 if type == "INT8" else np.int16)
        return self.add_tensor(self.sg.tensors[t], type, quant, q)

    def operand(self, t: int, type: str, quant: Quantization | None = None) -> int:
        """Input t of a quantized op: absent (-1) as is, a non-float tensor copied, a float constant quantized, a
        run-time value in ``type`` (and in ``quant`` when given)."""
        if t < 0:
            return t
        if not is_float(self.src, t):
            return self.non_float(t)
        if is_const(self.src, t):
            return self.const(t, quant, type)
        return self.get_q(t, quant, type)

    def get_q(self, t: int, quant: Quantization | None = None, type: str | None = None) -> int:
        """The quantized copy of source tensor t in ``type`` (default: the build's activation type):
        QUANTIZE from its float copy when only that exists, or from its integer copy of the other type
        (int8 <-> int16 around an op widened to int16x8); with ``quant``, a copy in exactly that
        quantization, requantizing when it differs."""
        type = type or self.act
        if t not in self.qt and (t, type) in self.qx:
            n = self.qx[(t, type)]
            if quant is None or same_quant(self.tensors[n].quantization, quant):
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
        if quant is None or same_quant(self.tensors[n].quantization, quant):
            return n
        r = self.add_tensor(self.sg.tensors[t], type, quant, suffix="_requant")
        self.add_op("QUANTIZE", [n], [r], version=self.version("QUANTIZE", 1, type))
        return r

    def get_f(self, t: int) -> int:
        """The float copy of source tensor t (DEQUANTIZE from its integer copy when only that exists)."""
        if t not in self.ft:
            q = self.qt[t]
            n = self.add_tensor(self.sg.tensors[t], "FLOAT32", None, suffix="_dequant")
            self.add_op("DEQUANTIZE", [q], [n], version=self.version("DEQUANTIZE", 1))
            self.ft[t] = n
        return self.ft[t]

    # ---------------------------------------------------------------- model inputs and outputs
    def model_input(self, t: int, io: str) -> int:
        """Model input t in the new graph: float with ``io="float32"``, else in the activation type."""
        if not is_float(self.src, t):
            n = self.copy_tensor(t)
            self.qt[t] = self.ft[t] = n
        elif io == "float32":
            n = self.add_tensor(self.sg.tensors[t], "FLOAT32", None)
            self.ft[t] = n
        else:
            n = self.add_tensor(self.sg.tensors[t], self.act, self.default_quant(t))
            self.qt[t] = n
        self.io_map[t] = n
        return n

    def model_output(self, t: int, io: str) -> int:
        """Model output t in the new graph: float with ``io="float32"``, else its own integer copy (int16 after a
        widened op or a wide join)."""
        if not is_float(self.src, t):
            n = self.qt.get(t, self.ft.get(t))
        elif io == "float32":
            n = self.get_f(t)
        else:
            n = self.qt[t] if t in self.qt else self.get_q(t)
        self.io_map[t] = n
        return n

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

    def add_like(self, i: int, op: Operator, inputs, outputs, version: int, custom_options=None) -> None:
        """Source op i (its name and options) on new inputs and outputs, at op version ``version``. An int16 ADD /
        SUB says its scales are general (pot_scale_int16 false, as TFLite's quantizer writes it): the schema's
        default (true) makes LiteRT refuse any pair of scales that are not powers of two."""
        options = op.options
        if options and "pot_scale_int16" in options and outputs and self.tensors[outputs[0]].type == "INT16":
            options = {**options, "pot_scale_int16": False}
        self.add_op(self.src.op_name(op), inputs, outputs, options, op.options_type, version, origin=i,
                    custom_options=custom_options)

    def version(self, name: str, src_version: int, act: str | None = None) -> int:
        """The op version of ``name`` computing in ``act`` (the row's ``q_versions``), never below the source's
        nor above what the interpreter runs."""
        act = act or self.act
        row = op_table.row(name)
        wanted = row.q_versions[0] if act == "INT8" else row.q_versions[1] if act == "INT16" else None
        v = src_version if wanted is None else wanted
        return max(src_version, min(v, row.max_version if row.runs else v))

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


def drop_unused_buffers(model: Model) -> Model:
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


def verify(qmodel: Model):
    """The quantized model must prepare in our interpreter, whose kernels check what TFLM's check. Returns that
    interpreter, prepared (the search's task judge runs the model in it rather than preparing it again)."""
    from edge_sdk.runtime.interpreter import Interpreter

    try:
        interp = Interpreter(model=qmodel)
        interp.allocate_tensors()
    except ModelError as exc:
        raise ConversionError("quantize: the quantized model does not prepare", [str(exc)]) from exc
    return interp
