"""Quantized ONNX and onnxruntime's fused ops, rewritten into the float ONNX ops ``import_onnx`` maps.

``rewrite(proto, opset)`` runs on the ONNX graph before folding and shape inference and returns a
``Rewritten`` record (given quantization, refusals, notes). What it does:

- QDQ (``quantize_static(..., quant_format=QuantFormat.QDQ)``): a ``QuantizeLinear -> DequantizeLinear`` pair
  with the same scale / zero point becomes the identity on the float tensor -- or a ``Relu`` when the range
  starts at exactly 0 (zero point = the type's minimum: onnxruntime folds a Relu into the pair, so the pair's
  clamp is the model's ReLU) and the value is not >= 0 anyway (Softmax, MaxPool of a ReLU, ...). The clamp at
  the range's top is not kept in the float graph (a folded Clip(0, 6) becomes a Relu): the quantized model
  saturates there again. The pair's (scale, zero point) is recorded for the float tensor that replaces the
  DequantizeLinear output. QOperator-format graphs (QLinearConv, QGemm, ...) are refused, naming the QDQ export. A ``DequantizeLinear`` of a constant (int8 weights, int32 biases) folds to its float
  value at import, its (scale, zero point, axis) recorded. A lone ``QuantizeLinear`` / ``DequantizeLinear``
  (a real int8 tensor at run time) stays and becomes TFLite QUANTIZE / DEQUANTIZE.
- Dynamic int8 (``quantize_dynamic``): ``DynamicQuantizeLinear(x) -> MatMulInteger / ConvInteger(., W_q) ->
  Cast(float) -> Mul(x_scale * W_scale)`` becomes ``MatMul / Conv(x, W)`` over the dequantized weights: the
  activations' run-time quantization is a detail of the runtime, the float graph is what it approximates.
  ``com.microsoft`` ``DynamicQuantizeMatMul`` / ``MatMulIntegerToFloat`` (fed by DynamicQuantizeLinear) and
  ``DynamicQuantizeLSTM`` likewise become MatMul (+ bias) and LSTM over dequantized weights. The source is
  recorded as dynamic-int8 (dynamic-range quantization is its like-for-like TFLite form).
- ``com.microsoft`` fused ops: SkipLayerNormalization, FastGelu, BiasGelu, Gelu, QuickGelu, FusedMatMul,
  BiasAdd and Attention (packed QKV weights, no past state; QAttention over dequantized weights) become
  standard ops.

The given quantization (the hand-off to the quantizer) is ``Rewritten.given``: ONNX value name -> dict
(scale, zero_point, axis, dtype, kind "activation" | "weight"); ``import_onnx`` puts it on the float
tensors' ``Tensor.quantization`` (see ``import_onnx`` docstring) and summarises it in
``model.import_notes["quantized_source"]``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

MS = "com.microsoft"
_QRANGE = {np.dtype(np.int8): (-128, 127), np.dtype(np.uint8): (0, 255), np.dtype(np.int16): (-32768, 32767),
           np.dtype(np.uint16): (0, 65535), np.dtype(np.int32): (-2 ** 31, 2 ** 31 - 1)}
# onnxruntime contrib ops this module rewrites (others in com.microsoft stay and are refused by name)
CONTRIB_OPS = ("SkipLayerNormalization", "FastGelu", "BiasGelu", "Gelu", "QuickGelu", "FusedMatMul", "BiasAdd",
               "Attention", "QAttention", "DynamicQuantizeLSTM", "DynamicQuantizeMatMul", "MatMulIntegerToFloat")


@dataclass
class Rewritten:
    given: dict = field(default_factory=dict)  # ONNX value name -> given quantization (see module docstring)
    refused: dict = field(default_factory=dict)  # first output name of a node left in place -> reason
    source: str | None = None  # "qdq" | "dynamic-int8" | "qdq+dynamic-int8" | None
    rewritten: dict = field(default_factory=dict)  # op type -> how many were rewritten

    def count(self, op_type):
        self.rewritten[op_type] = self.rewritten.get(op_type, 0) + 1


def given_entry(scale, zero_point, axis, kind, dtype) -> dict:
    scale = np.asarray(scale, np.float32).reshape(-1)
    zp = np.asarray(zero_point if zero_point is not None else 0, np.int64).reshape(-1)
    qmin, qmax = _QRANGE.get(np.dtype(dtype), (-128, 127))
    return {"scale": scale, "zero_point": np.broadcast_to(zp, scale.shape).copy(), "axis": int(axis),
            "dtype": np.dtype(dtype).name, "kind": kind,
            "min": (scale * (qmin - zp)).astype(np.float32), "max": (scale * (qmax - zp)).astype(np.float32)}


class _Graph:
    """The ONNX graph being rewritten: constants, producers / consumers, fresh names, new nodes."""

    def __init__(self, proto, opset):
        from onnx import numpy_helper

        from converters.onnx_control import Namer

        self.proto = proto
        self.graph = proto.graph
        self.opset = opset
        self.namer = Namer(self.graph)
        self.consts = {i.name: numpy_helper.to_array(i) for i in self.graph.initializer}
        for n in self.graph.node:
            if n.op_type == "Constant" and n.domain in ("", "ai.onnx") and n.attribute \
                    and n.attribute[0].name == "value":
                self.consts[n.output[0]] = numpy_helper.to_array(n.attribute[0].t)
        self.outputs = {o.name for o in self.graph.output}
        self.ranks = {}
        for vi in list(self.graph.input) + list(self.graph.value_info):
            tt = vi.type.tensor_type
            if tt.HasField("shape"):
                self.ranks[vi.name] = len(tt.shape.dim)

    def infer_ranks(self):
        """Ranks from onnx shape inference (it passes over the com.microsoft nodes not rewritten yet)."""
        import onnx

        try:
            inferred = onnx.shape_inference.infer_shapes(self.proto)
        except Exception:  # noqa: BLE001 -- an aid: a rank still unknown is refused by name
            return
        for vi in list(inferred.graph.input) + list(inferred.graph.value_info) + list(inferred.graph.output):
            tt = vi.type.tensor_type
            if tt.HasField("shape"):
                self.ranks[vi.name] = len(tt.shape.dim)

    def producer(self, name):
        return next((n for n in self.graph.node if name in n.output), None)

    def const(self, name):
        return self.consts.get(name) if name else None

    def add_const(self, base, value) -> str:
        from onnx import numpy_helper

        name = self.namer.fresh(base)
        value = np.asarray(value)
        self.graph.initializer.append(numpy_helper.from_array(value, name))
        self.consts[name] = value
        return name

    def node(self, out, op_type, inputs, outputs=None, **attrs):
        """Append a standard-domain node to ``out``; returns its (first) output name."""
        from onnx import helper

        outputs = outputs or [self.namer.fresh(f"{op_type.lower()}_out")]
        out.append(helper.make_node(op_type, list(inputs), list(outputs), name=self.namer.fresh(op_type), **attrs))
        return outputs[0]

    def reduce_mean_last(self, out, x) -> str:
        if self.opset >= 18:
            return self.node(out, "ReduceMean", [x, self.add_const("axes", np.array([-1], np.int64))], keepdims=1)
        return self.node(out, "ReduceMean", [x], axes=[-1], keepdims=1)

    def unsqueeze(self, out, x, axes) -> str:
        if self.opset >= 13:
            return self.node(out, "Unsqueeze", [x, self.add_const("axes", np.array(axes, np.int64))])
        return self.node(out, "Unsqueeze", [x], axes=list(axes))


def _attrs(node) -> dict:
    from onnx import helper

    out = {}
    for a in node.attribute:
        v = helper.get_attribute_value(a)
        out[a.name] = v.decode() if isinstance(v, bytes) else v
    return out


_QOPERATOR = ("QLinearConv", "QLinearMatMul", "QGemm", "QLinearAdd", "QLinearMul", "QLinearSoftmax",
              "QLinearSigmoid", "QLinearLeakyRelu", "QLinearConcat", "QLinearGlobalAveragePool",
              "QLinearAveragePool", "QLinearReduceMean", "QLinearWhere", "QLinearConvTranspose")


def rewrite(proto, opset) -> Rewritten:
    """Rewrite ``proto`` (in place) as described in the module docstring."""
    g = _Graph(proto, opset)
    r = Rewritten()
    g.given = r.given  # the contrib rewrites record their dequantized weights here
    for n in g.graph.node:
        if n.op_type in _QOPERATOR and n.output:
            r.refused[n.output[0]] = ("a QOperator-format quantized op (integer in, integer out): re-export with "
                                      "onnxruntime's quantize_static(..., quant_format=QuantFormat.QDQ) -- QDQ "
                                      "graphs import with their own scales")
    _qdq(g, r)
    _dynamic(g, r)
    _contrib(g, r)
    return r


# --------------------------------------------------------------------------------------------- QDQ
def _same(a, b) -> bool:
    return a is not None and b is not None and np.array_equal(np.asarray(a).reshape(-1), np.asarray(b).reshape(-1))


def _qdq(g: _Graph, r: Rewritten):
    from onnx import helper

    nodes = list(g.graph.node)
    by_output = {o: n for n in nodes for o in n.output}
    replace = {}  # id(DequantizeLinear node) -> the node replacing it
    for n in nodes:
        if n.op_type != "DequantizeLinear" or n.domain not in ("", "ai.onnx"):
            continue
        inp = list(n.input) + [""] * (3 - len(n.input))
        scale, zp = g.const(inp[1]), g.const(inp[2])
        if scale is None:
            continue
        axis = int(_attrs(n).get("axis", 1))
        if inp[0] in g.consts:  # a constant int8 weight / int32 bias: folds at import, its scale recorded
            w = g.consts[inp[0]]
            if scale.size > 1:
                axis = axis % w.ndim
            r.given[n.output[0]] = given_entry(scale, zp, axis if scale.size > 1 else 0, "weight", w.dtype)
            r.source = r.source or "qdq"
            continue
        q = by_output.get(inp[0])
        if q is not None and q.op_type == "Gather" and q.input[0] in g.consts and scale.size == 1:
            # quantize_dynamic's embedding: Gather(int8 table, ids) -> DequantizeLinear == Gather(float table, ids)
            table = g.consts[q.input[0]]
            fname = g.add_const(f"{q.input[0]}_dequantized", _dequantized(table, scale, zp, 0))
            r.given[fname] = given_entry(scale, zp, 0, "weight", table.dtype)
            replace[id(n)] = helper.make_node("Gather", [fname, q.input[1]], [n.output[0]],
                                              name=n.name or g.namer.fresh("Gather"), **_attrs(q))
            r.source = "dynamic-int8" if r.source in (None, "dynamic-int8") else "qdq+dynamic-int8"
            continue
        if q is None or q.op_type != "QuantizeLinear" or q.domain not in ("", "ai.onnx"):
            continue  # a run-time int8 tensor: DEQUANTIZE
        qin = list(q.input) + [""] * (3 - len(q.input))
        if qin[0] in g.consts:  # fake-quantized float weights (Q -> DQ of a constant): both fold, scale recorded
            w = g.consts[qin[0]]
            dtype = np.asarray(zp).dtype if zp is not None else np.dtype(np.uint8)
            r.given[n.output[0]] = given_entry(scale, zp, axis % w.ndim if scale.size > 1 else 0, "weight", dtype)
            r.source = r.source or "qdq"
            continue
        qzp = g.const(qin[2])
        if not _same(g.const(qin[1]), scale) or not (_same(qzp, zp) or (qzp is None and zp is None)) \
                or scale.size != 1:
            continue  # a requantization (different scales) or per-axis activation: kept as QUANTIZE / DEQUANTIZE
        dtype = np.asarray(zp).dtype if zp is not None else np.dtype(np.uint8)
        entry = given_entry(scale, zp, 0, "activation", dtype)
        op = "Relu" if float(entry["min"][0]) == 0.0 and not _non_negative(qin[0], g, by_output) else "Identity"
        replace[id(n)] = helper.make_node(op, [qin[0]], [n.output[0]], name=n.name or g.namer.fresh("qdq"))
        r.given[n.output[0]] = entry
        r.source = "qdq"
    if not replace:
        return
    kept = [replace.get(id(n), n) for n in nodes]
    # a QuantizeLinear whose every reader was a replaced DequantizeLinear is gone with them
    read = {i for n in kept for i in n.input} | g.outputs
    kept = [n for n in kept if not (n.op_type in ("QuantizeLinear", "Gather") and not any(o in read for o in n.output))]
    del g.graph.node[:]
    g.graph.node.extend(kept)
    r.count("DequantizeLinear")


# ops whose output is >= 0 whatever their input; ops that only move / select values (non-negative when their
# data inputs are)
_NON_NEGATIVE_OPS = {"Relu", "Sigmoid", "Softmax", "Exp", "Abs", "Sqrt", "HardSigmoid", "Softplus"}
_MOVING_OPS = {"MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool", "Reshape", "Flatten", "Transpose",
               "Squeeze", "Unsqueeze", "Concat", "Slice", "Gather", "Resize", "Identity", "DepthToSpace",
               "SpaceToDepth", "Split", "ReduceMax", "ReduceMean"}


def _non_negative(name, g, by_output, depth=0) -> bool:
    """Value ``name`` of the source graph is >= 0 by construction: a QDQ pair with a range from 0 on it needs no
    Relu (onnxruntime folds a Relu into the pair only after an op that can go negative)."""
    if name in g.consts:
        return bool((np.asarray(g.consts[name]) >= 0).all())
    p = by_output.get(name)
    if p is None or depth > 32 or p.domain not in ("", "ai.onnx"):
        return False
    if p.op_type in _NON_NEGATIVE_OPS:
        return True
    if p.op_type == "Clip":
        low = g.const(p.input[1]) if len(p.input) > 1 and p.input[1] else _attrs(p).get("min")
        return low is not None and float(np.asarray(low)) >= 0
    if p.op_type == "DequantizeLinear":
        zp, scale = g.const(p.input[2]) if len(p.input) > 2 else None, g.const(p.input[1])
        if scale is None or np.size(scale) != 1:
            return False
        dtype = np.asarray(zp).dtype if zp is not None else np.dtype(np.uint8)
        qmin = _QRANGE.get(dtype, (-128, 127))[0]
        return int(np.asarray(0 if zp is None else zp)) == qmin or _non_negative(p.input[0], g, by_output, depth + 1)
    if p.op_type == "QuantizeLinear":
        return _non_negative(p.input[0], g, by_output, depth + 1)
    if p.op_type in _MOVING_OPS:
        data = [i for i in p.input if i] if p.op_type == "Concat" else p.input[:1]
        return all(_non_negative(i, g, by_output, depth + 1) for i in data)
    return False


# --------------------------------------------------------------------------------------------- dynamic int8
def _dequantized(w, scale, zp, axis) -> np.ndarray:
    """(w - zp) * scale, scale / zp per tensor or along ``axis``."""
    w = np.asarray(w).astype(np.float32)
    shape = [1] * w.ndim
    scale = np.asarray(scale, np.float32)
    zp = np.zeros(1, np.float32) if zp is None else np.asarray(zp).astype(np.float32)
    if scale.size > 1 or zp.size > 1:
        shape[axis] = -1
    return ((w - zp.reshape(shape)) * scale.reshape(shape)).astype(np.float32)


def _dynamic(g: _Graph, r: Rewritten):
    nodes = list(g.graph.node)
    by_output = {o: n for n in nodes for o in n.output}
    readers = {}
    for n in nodes:
        for i in n.input:
            readers.setdefault(i, []).append(n)
    drop, replace = set(), {}

    def only_reader(name, op_type):
        rs = readers.get(name, [])
        if len(rs) == 1 and rs[0].op_type == op_type and name not in g.outputs:
            return rs[0]
        return None

    for n in nodes:
        if n.op_type not in ("MatMulInteger", "ConvInteger") or n.domain not in ("", "ai.onnx"):
            continue
        key = n.output[0]
        inp = list(n.input) + [""] * (4 - len(n.input))
        dql = by_output.get(inp[0])
        w, w_zp = g.const(inp[1]), g.const(inp[3])
        cast = only_reader(n.output[0], "Cast")
        mul = only_reader(cast.output[0], "Mul") if cast is not None and _attrs(cast).get("to") == 1 else None
        if dql is None or dql.op_type != "DynamicQuantizeLinear" or inp[2] not in ("", dql.output[2]) or w is None \
                or mul is None:
            r.refused[key] = ("only onnxruntime's quantize_dynamic form is mapped: DynamicQuantizeLinear -> "
                              f"{n.op_type} on constant weights -> Cast(float) -> Mul(x_scale * w_scale)")
            continue
        scale_name = mul.input[1] if mul.input[0] == cast.output[0] else mul.input[0]
        scale_mul = by_output.get(scale_name)
        w_scale = None
        if scale_mul is not None and scale_mul.op_type == "Mul" and dql.output[1] in scale_mul.input:
            w_scale = g.const(scale_mul.input[1] if scale_mul.input[0] == dql.output[1] else scale_mul.input[0])
        if w_scale is None:
            r.refused[key] = (f"the {n.op_type} result is not scaled by DynamicQuantizeLinear's scale times a "
                              "constant weight scale")
            continue
        axis = 1 if n.op_type == "MatMulInteger" else 0  # per-column (MatMul) / per-output-channel (Conv)
        wf = _dequantized(w, w_scale, w_zp, axis)
        wname = g.add_const(f"{inp[1]}_dequantized", wf)
        r.given[wname] = given_entry(w_scale, w_zp, axis if np.size(w_scale) > 1 else 0, "weight", w.dtype)
        from onnx import helper

        attrs = _attrs(n)
        op = "MatMul" if n.op_type == "MatMulInteger" else "Conv"
        replace[id(mul)] = helper.make_node(op, [dql.input[0], wname], [mul.output[0]],
                                            name=n.name or g.namer.fresh(op), **(attrs if op == "Conv" else {}))
        drop.update({id(n), id(cast)})
        r.count(n.op_type)
        r.source = "dynamic-int8" if r.source in (None, "dynamic-int8") else "qdq+dynamic-int8"
    for n in nodes:  # com.microsoft forms over dynamically quantized activations
        if n.domain != MS or n.op_type not in ("DynamicQuantizeMatMul", "MatMulIntegerToFloat"):
            continue
        inp = list(n.input) + [""] * (7 - len(n.input))
        if n.op_type == "DynamicQuantizeMatMul":
            x, w, w_scale, w_zp, bias = inp[0], inp[1], inp[2], inp[3], inp[4]
        else:
            dql = by_output.get(inp[0])
            if dql is None or dql.op_type != "DynamicQuantizeLinear" or inp[4] not in ("", dql.output[2]) \
                    or inp[2] != dql.output[1]:
                r.refused[n.output[0]] = "MatMulIntegerToFloat is mapped only over DynamicQuantizeLinear's output"
                continue
            x, w, w_scale, w_zp, bias = dql.input[0], inp[1], inp[3], inp[5], inp[6]
        if g.const(w) is None or g.const(w_scale) is None:
            r.refused[n.output[0]] = "B and its scale must be constants"
            continue
        wf = _dequantized(g.const(w), g.const(w_scale), g.const(w_zp), 1)
        wname = g.add_const(f"{w}_dequantized", wf)
        r.given[wname] = given_entry(g.const(w_scale), g.const(w_zp), 1 if np.size(g.const(w_scale)) > 1 else 0,
                                     "weight", g.const(w).dtype)
        new = []
        if bias:
            g.node(new, "Add", [g.node(new, "MatMul", [x, wname]), bias], [n.output[0]])
        else:
            g.node(new, "MatMul", [x, wname], [n.output[0]])
        replace[id(n)] = new
        r.count(n.op_type)
        r.source = "dynamic-int8" if r.source in (None, "dynamic-int8") else "qdq+dynamic-int8"
    if not replace and not drop:
        return
    kept = []
    for n in nodes:
        if id(n) in drop:
            continue
        rep = replace.get(id(n), n)
        kept.extend(rep if isinstance(rep, list) else [rep])
    _drop_dead(kept, g, ("DynamicQuantizeLinear", "Mul"))
    del g.graph.node[:]
    g.graph.node.extend(kept)


def _drop_dead(nodes, g, op_types):
    """Remove nodes of ``op_types`` none of whose outputs is read (what a rewrite left behind)."""
    while True:
        read = {i for n in nodes for i in n.input} | g.outputs
        dead = [k for k, n in enumerate(nodes) if n.op_type in op_types and n.domain in ("", "ai.onnx")
                and not any(o in read for o in n.output if o)]
        if not dead:
            return
        for k in reversed(dead):
            del nodes[k]


# --------------------------------------------------------------------------------------------- com.microsoft
def _contrib(g: _Graph, r: Rewritten):
    if not any(n.domain == MS for n in g.graph.node):
        return
    fed, inferred = set(), False
    for _ in range(64):  # a pass rewrites what it can; a node waiting for a rank gets it from the next inference
        kept, waiting, progress = [], {}, False
        for n in list(g.graph.node):
            if n.domain != MS or n.op_type not in _CONTRIB or n.output[0] in r.refused:
                kept.append(n)
                continue
            new = []
            try:
                _CONTRIB[n.op_type](g, n, _attrs(n), list(n.input), new)
            except _NeedRank as exc:
                waiting[n.output[0]] = str(exc)
                kept.append(n)
                continue
            except _Refuse as exc:
                r.refused[n.output[0]] = str(exc)
                kept.append(n)
                continue
            fed.update(n.input)
            kept.extend(new)
            progress = True
            r.count(n.op_type)
            if n.op_type in ("DynamicQuantizeLSTM", "QAttention"):
                r.source = "dynamic-int8" if r.source in (None, "dynamic-int8") else "qdq+dynamic-int8"
        del g.graph.node[:]
        g.graph.node.extend(kept)
        if not waiting:
            break
        if not progress and inferred:
            r.refused.update(waiting)
            break
        g.infer_ranks()
        inferred = True
    else:
        r.refused.update(waiting)
    kept = list(g.graph.node)
    # what fed only a rewritten op and is read no more (DynamicQuantizeLinear, a Gather of an int8 table) goes
    while True:
        read = {i for n in kept for i in n.input} | g.outputs
        dead = [k for k, n in enumerate(kept)
                if any(o in fed for o in n.output) and not any(o in read for o in n.output)]
        if not dead:
            break
        for k in reversed(dead):
            fed.update(kept[k].input)
            del kept[k]
    del g.graph.node[:]
    g.graph.node.extend(kept)


class _Refuse(Exception):
    pass


class _NeedRank(_Refuse):
    """The rewrite needs a value's rank, which shape inference gives once the nodes before it are rewritten."""


def _used(g, name) -> bool:
    return bool(name) and (name in g.outputs or any(name in n.input for n in g.graph.node))


def _arg(inputs, i):
    return inputs[i] if len(inputs) > i and inputs[i] else ""


def _layer_norm(g, new, x, gamma, beta, eps, out):
    if g.opset >= 17:
        return g.node(new, "LayerNormalization", [x, gamma] + ([beta] if beta else []), [out], axis=-1,
                      epsilon=float(eps))
    mean = g.reduce_mean_last(new, x)
    d = g.node(new, "Sub", [x, mean])
    var = g.reduce_mean_last(new, g.node(new, "Mul", [d, d]))
    std = g.node(new, "Sqrt", [g.node(new, "Add", [var, g.add_const("eps", np.array(eps, np.float32))])])
    y = g.node(new, "Mul", [g.node(new, "Div", [d, std]), gamma], None if beta else [out])
    return g.node(new, "Add", [y, beta], [out]) if beta else y


def _skip_layer_norm(g, n, a, ins, new):
    for o in n.output[1:3]:
        if _used(g, o):
            raise _Refuse("the mean / inv_std_var outputs are not mapped")
    s = g.node(new, "Add", [ins[0], ins[1]])
    if _arg(ins, 4):
        s = g.node(new, "Add", [s, ins[4]], [n.output[3]] if _used(g, _arg(n.output, 3)) else None)
    elif _used(g, _arg(n.output, 3)):
        s = g.node(new, "Identity", [s], [n.output[3]])
    _layer_norm(g, new, s, ins[2], _arg(ins, 3), a.get("epsilon", 1e-12), n.output[0])


def _gelu_erf(g, new, x, out):
    e = g.node(new, "Erf", [g.node(new, "Mul", [x, g.add_const("rsqrt2", np.array(1 / math.sqrt(2), np.float32))])])
    one = g.node(new, "Add", [e, g.add_const("one", np.array(1.0, np.float32))])
    half = g.node(new, "Mul", [x, g.add_const("half", np.array(0.5, np.float32))])
    return g.node(new, "Mul", [half, one], [out])


def _fast_gelu(g, n, a, ins, new):
    x = g.node(new, "Add", [ins[0], ins[1]]) if _arg(ins, 1) else ins[0]
    x3 = g.node(new, "Mul", [g.node(new, "Mul", [x, x]), x])
    inner = g.node(new, "Add", [x, g.node(new, "Mul", [x3, g.add_const("c", np.array(0.044715, np.float32))])])
    t = g.node(new, "Tanh", [g.node(new, "Mul", [inner, g.add_const("k", np.array(math.sqrt(2 / math.pi),
                                                                                   np.float32))])])
    one = g.node(new, "Add", [t, g.add_const("one", np.array(1.0, np.float32))])
    half = g.node(new, "Mul", [x, g.add_const("half", np.array(0.5, np.float32))])
    g.node(new, "Mul", [half, one], [n.output[0]])


def _bias_gelu(g, n, a, ins, new):
    _gelu_erf(g, new, g.node(new, "Add", [ins[0], ins[1]]), n.output[0])


def _gelu(g, n, a, ins, new):
    _gelu_erf(g, new, ins[0], n.output[0])


def _quick_gelu(g, n, a, ins, new):
    alpha = float(a.get("alpha", 1.702))
    s = g.node(new, "Sigmoid", [g.node(new, "Mul", [ins[0], g.add_const("alpha", np.array(alpha, np.float32))])])
    g.node(new, "Mul", [ins[0], s], [n.output[0]])


def _bias_add(g, n, a, ins, new):  # BiasAdd: X + bias + skip
    g.node(new, "Add", [g.node(new, "Add", [ins[0], ins[1]]), ins[2]], [n.output[0]])


def _swap_last(g, new, x, name) -> str:
    rank = g.ranks.get(name)
    if rank is None:
        c = g.const(name)
        rank = None if c is None else c.ndim
    if rank is None:
        raise _NeedRank(f"transA / transB on '{name}', whose rank is not known")
    return g.node(new, "Transpose", [x], perm=list(range(rank - 2)) + [rank - 1, rank - 2])


def _fused_matmul(g, n, a, ins, new):
    if int(a.get("transBatchA", 0)) or int(a.get("transBatchB", 0)):
        raise _Refuse("transBatchA / transBatchB are not mapped")
    x, y = ins[0], ins[1]
    if int(a.get("transA", 0)):
        x = _swap_last(g, new, x, ins[0])
    if int(a.get("transB", 0)):
        c = g.const(ins[1])
        y = g.add_const(f"{ins[1]}_t", np.swapaxes(c, -1, -2)) if c is not None else _swap_last(g, new, y, ins[1])
    alpha = float(a.get("alpha", 1.0))
    if alpha == 1.0:
        g.node(new, "MatMul", [x, y], [n.output[0]])
    else:
        g.node(new, "Mul", [g.node(new, "MatMul", [x, y]), g.add_const("alpha", np.array(alpha, np.float32))],
               [n.output[0]])


def _attention(g, n, a, ins, new):
    if _arg(ins, 4) or _used(g, _arg(n.output, 1)):
        raise _Refuse("past / present state is not mapped (a self-attention without a KV cache is)")
    if int(a.get("do_rotary", 0)):
        raise _Refuse("do_rotary=1 (rotary embedding) is not mapped")
    w = g.const(ins[1])
    if w is None or w.ndim != 2:
        raise _Refuse("the packed QKV weights must be a 2-D constant")
    heads = int(a["num_heads"])
    sizes = list(a.get("qkv_hidden_sizes", [])) or [w.shape[1] // 3] * 3
    if sum(sizes) != w.shape[1] or any(s % heads for s in sizes):
        raise _Refuse(f"qkv_hidden_sizes {sizes} do not fit weights {list(w.shape)} and num_heads {heads}")
    bias = g.const(_arg(ins, 2))
    if _arg(ins, 2) and bias is None:
        raise _Refuse("the QKV bias must be a constant")
    head_q, head_v = sizes[0] // heads, sizes[2] // heads
    scale = float(a.get("scale", 1 / math.sqrt(head_q)))
    filt = float(a.get("mask_filter_value", -10000.0))
    edges = np.cumsum([0] + sizes)
    parts = []
    for k, tag in enumerate("qkv"):
        y = g.node(new, "MatMul", [ins[0], g.add_const(f"{n.name or 'attention'}_W{tag}",
                                                       np.ascontiguousarray(w[:, edges[k]:edges[k + 1]]))])
        if bias is not None:
            y = g.node(new, "Add", [y, g.add_const(f"{n.name or 'attention'}_b{tag}",
                                                   np.ascontiguousarray(bias[edges[k]:edges[k + 1]]))])
        head = head_v if tag == "v" else head_q
        y = g.node(new, "Reshape", [y, g.add_const("heads", np.array([0, 0, heads, head], np.int64))])
        parts.append(g.node(new, "Transpose", [y], perm=[0, 2, 3, 1] if tag == "k" else [0, 2, 1, 3]))
    q, k, v = parts  # (B, N, S, h), (B, N, h, S), (B, N, S, hv)
    scores = g.node(new, "Mul", [g.node(new, "MatMul", [q, k]), g.add_const("scale", np.array(scale, np.float32))])
    mask = _arg(ins, 3)
    if mask:
        rank = g.ranks.get(mask, None if g.const(mask) is None else g.const(mask).ndim)
        if rank is None:
            raise _NeedRank(f"mask_index '{mask}' has no known rank")
        if rank not in (2, 3):
            raise _Refuse("mask_index is mapped as a 0/1 mask of shape (batch, total_length) or (batch, length, "
                          f"total_length); this one has {'an unknown rank' if rank is None else f'rank {rank}'} "
                          "(end-position indices are not)")
        m = g.node(new, "Cast", [mask], to=1)
        add = g.node(new, "Mul", [g.node(new, "Sub", [g.add_const("one", np.array(1.0, np.float32)), m]),
                                  g.add_const("filter", np.array(filt, np.float32))])
        scores = g.node(new, "Add", [scores, g.unsqueeze(new, add, [1, 2] if rank == 2 else [1])])
    if int(a.get("unidirectional", 0)):
        # a (S, S) mask from the sequence length: Shape / Gather / Range / Greater / Where all fold at import
        s = g.node(new, "Gather", [g.node(new, "Shape", [scores]), g.add_const("axis2", np.array(2, np.int64))],
                   axis=0)
        pos = g.node(new, "Range", [g.add_const("zero", np.array(0, np.int64)), s,
                                    g.add_const("step", np.array(1, np.int64))])
        col = g.node(new, "Reshape", [pos, g.add_const("row", np.array([1, -1], np.int64))])
        row = g.node(new, "Reshape", [pos, g.add_const("col", np.array([-1, 1], np.int64))])
        future = g.node(new, "Greater", [col, row])
        causal = g.node(new, "Where", [future, g.add_const("filter", np.array(filt, np.float32)),
                                       g.add_const("zero", np.array(0.0, np.float32))])
        scores = g.node(new, "Add", [scores, causal])
    if _arg(ins, 5):
        scores = g.node(new, "Add", [scores, ins[5]])
    probs = g.node(new, "Softmax", [scores], axis=-1)
    ctx = g.node(new, "Transpose", [g.node(new, "MatMul", [probs, v])], perm=[0, 2, 1, 3])
    g.node(new, "Reshape", [ctx, g.add_const("merge", np.array([0, 0, sizes[2]], np.int64))], [n.output[0]])


def _float_source(g, new, name, scale, zp) -> str:
    """A float ONNX value equal to dequantized ``name`` (a DynamicQuantizeLinear's output: its input; a Gather
    of a constant int8 table: the Gather of the dequantized table; else a DequantizeLinear node)."""
    prod = g.producer(name)
    if prod is not None and prod.op_type == "DynamicQuantizeLinear" and prod.domain in ("", "ai.onnx"):
        return prod.input[0]
    s, z = g.const(scale), g.const(zp)
    if prod is not None and prod.op_type == "Gather" and prod.input[0] in g.consts and s is not None \
            and np.size(s) == 1:
        table = g.add_const(f"{prod.input[0]}_dequantized", _dequantized(g.consts[prod.input[0]], s, z, 0))
        return g.node(new, "Gather", [table, prod.input[1]], **_attrs(prod))
    return g.node(new, "DequantizeLinear", [name, scale] + ([zp] if zp else []))


def _q_attention(g, n, a, ins, new):
    """QAttention (quantize_dynamic's Attention): Attention over the dequantized input and weights."""
    ins = ins + [""] * (9 - len(ins))
    w, ws, wz = g.const(ins[1]), g.const(ins[4]), g.const(ins[7])
    if w is None or ws is None:
        raise _Refuse("the weights and their scale must be constants")
    x = _float_source(g, new, ins[0], ins[3], ins[6])
    wname = g.add_const(f"{ins[1]}_dequantized", _dequantized(w, ws, wz, 1))
    g.given[wname] = given_entry(ws, wz, 1 if np.size(ws) > 1 else 0, "weight", w.dtype)
    _attention(g, n, a, [x, wname, ins[2], ins[5], ins[8]], new)


def _dynamic_quantize_lstm(g, n, a, ins, new):
    from onnx import helper

    ins = ins + [""] * (12 - len(ins))
    w, r = g.const(ins[1]), g.const(ins[2])
    ws, wz, rs, rz = (g.const(ins[k]) for k in (8, 9, 10, 11))
    if w is None or r is None or ws is None or rs is None:
        raise _Refuse("W, R and their scales must be constants")

    def deq(q, s, z):  # q: (D, in, 4H); s / z: (D,) per tensor or (D, 4H) per channel
        s = np.asarray(s, np.float32)
        z = np.zeros_like(s) if z is None else np.asarray(z).astype(np.float32)
        shape = (q.shape[0], 1, -1) if s.ndim == 2 else (q.shape[0], 1, 1)
        f = (q.astype(np.float32) - z.reshape(shape)) * s.reshape(shape)
        return np.ascontiguousarray(np.transpose(f, (0, 2, 1)))  # ONNX LSTM: (D, 4H, in)

    wname = g.add_const(f"{ins[1]}_dequantized", deq(w, ws, wz))
    rname = g.add_const(f"{ins[2]}_dequantized", deq(r, rs, rz))
    for name, s, z, q in ((wname, ws, wz, w), (rname, rs, rz, r)):  # per direction, or per gate row (axis 1 now)
        g.given[name] = given_entry(s, z, 1 if np.ndim(s) == 2 else 0, "weight", q.dtype)
    attrs = {k: v for k, v in a.items() if v not in (None, b"", "") or k == "direction"}
    lstm_inputs = [ins[0], wname, rname] + ins[3:8]
    while not lstm_inputs[-1]:
        lstm_inputs.pop()
    new.append(helper.make_node("LSTM", lstm_inputs, list(n.output),
                                name=n.name or g.namer.fresh("LSTM"), **attrs))


_CONTRIB = {"SkipLayerNormalization": _skip_layer_norm, "FastGelu": _fast_gelu, "BiasGelu": _bias_gelu,
            "Gelu": _gelu, "QuickGelu": _quick_gelu, "FusedMatMul": _fused_matmul, "BiasAdd": _bias_add,
            "Attention": _attention, "QAttention": _q_attention, "DynamicQuantizeLSTM": _dynamic_quantize_lstm}
