"""Legacy asymmetric UINT8 models (TFLite v1 "quantized_uint8": SSD MobileNet quant, MobileNet v1/v2 quant, ...)
presented to the int8 kernels of both runtimes.

A uint8 value q with zero point z is the int8 value q - 128 with zero point z - 128: real = s * (q - z) is
unchanged and every kernel that computes on (q - zero point) (LiteRT's uint8 reference kernels do, with the same
multipliers as the int8 ones) gives the same integers. So no kernel has a uint8 twin: at load, ``present`` rewrites
the model once (each quantized UINT8 tensor whose every op takes UINT8, ``OpRow.uint8``, becomes INT8 with its
zero points shifted by -128, its constant bytes flipped by x ^ 0x80 into a buffer of its own), and the
interpreters flip the values of those tensors at set_tensor / get_tensor (``to_int8`` / ``to_uint8``) and report
them as UINT8 in the tensor details (``details``). Weights keep their own zero point (LiteRT's *filter offset*):
the conv / depthwise / fully-connected kernels take a nonzero per-tensor weight zero point.
"""

from __future__ import annotations

import copy

import numpy as np

from edge_sdk.model.types import Buffer, Model, Quantization

SHIFT = 128  # uint8 q <-> int8 q - 128
# RESIZE_BILINEAR is the one uint8 kernel of LiteRT that does not compute on (q - zero point): it interpolates the
# uint8 values in float32, adds 0.5 and truncates, where its int8 kernel rounds a Q20 sum. So ``present`` marks each
# RESIZE_BILINEAR it presents: its ResizeBilinearOptions' new_height (deprecated since v1, read by no runtime)
# becomes FROM_UINT8, and both runtimes' kernels (resize.py, resize.c) then round as LiteRT's uint8 kernel.
FROM_UINT8 = -SHIFT


def _quantized(tensor) -> bool:
    q = tensor.quantization
    return q is not None and q.scale is not None and np.size(q.scale) > 0


def _takes_uint8(model: Model, sg, op) -> bool:
    """The op's row takes UINT8 (``OpRow.uint8``); a weighted op only with a quantized UINT8 data input (a FLOAT32
    input with UINT8 weights is LiteRT's hybrid kernel, which reads the weights as they are)."""
    from edge_sdk.runtime.op_table import ROWS

    r = ROWS.get(model.op_name(op))
    if r is None or not r.uint8:
        return False
    if r.weights is None:
        return True
    data = sg.tensors[op.inputs[0]] if op.inputs and op.inputs[0] >= 0 else None
    return data is not None and data.type == "UINT8" and _quantized(data)


def presented_tensors(model: Model) -> set[tuple[int, int]]:
    """(subgraph, tensor) of the quantized UINT8 tensors the rewrite presents as INT8: every op reading or writing
    one takes UINT8 (its row's ``uint8`` fact). A uint8 tensor some other op touches (CAST of raw bytes, ...)
    stays as it is, and that op's kernel answers for it."""
    chosen: set[tuple[int, int]] = set()
    for s, sg in enumerate(model.subgraphs):
        candidates = {t for t, tensor in enumerate(sg.tensors) if tensor.type == "UINT8" and _quantized(tensor)}
        if not candidates:
            continue
        for op in sg.operators:
            touched = candidates.intersection(t for t in (*op.inputs, *op.outputs) if t >= 0)
            if touched and not _takes_uint8(model, sg, op):
                candidates -= touched
        chosen |= {(s, t) for t in candidates}
    return chosen


def present(model: Model) -> tuple[Model, frozenset]:
    """The model the kernels run (uint8 tensors as int8, see the module docstring) and the (subgraph, tensor)
    pairs it presents. A model without such tensors comes back as it is."""
    chosen = presented_tensors(model)
    if not chosen:
        return model, frozenset()
    out = copy.copy(model)
    out.buffers = list(model.buffers)
    out.subgraphs = []
    # a buffer only presented tensors read is flipped where it is (the presented model is no bigger: the board's
    # flash holds it); one another tensor or the metadata reads too gets a flipped copy of its own
    readers: dict[int, set] = {}
    for s, sg in enumerate(model.subgraphs):
        for t, tensor in enumerate(sg.tensors):
            readers.setdefault(tensor.buffer, set()).add((s, t))
    shared = {m.buffer for m in model.metadata}
    flipped_at: dict[int, int] = {}  # old buffer -> the buffer holding its flipped bytes
    for s, sg in enumerate(model.subgraphs):
        sg2 = copy.copy(sg)
        sg2.tensors = list(sg.tensors)
        for t, tensor in enumerate(sg.tensors):
            if (s, t) not in chosen:
                continue
            q = tensor.quantization
            t2 = copy.copy(tensor)
            t2.type = "INT8"
            t2.quantization = Quantization(np.asarray(q.scale), np.asarray(q.zero_point, np.int64) - SHIFT,
                                           q.quantized_dimension, q.min, q.max)
            data = bytes(model.buffers[tensor.buffer].data) if tensor.buffer else b""
            if data:  # a constant: its bytes flipped once, in place or in a buffer of its own (see above)
                if tensor.buffer not in flipped_at:
                    flipped = Buffer((np.frombuffer(data, np.uint8) ^ SHIFT).tobytes())
                    if tensor.buffer in shared or not readers[tensor.buffer] <= chosen:
                        out.buffers.append(flipped)
                        flipped_at[tensor.buffer] = len(out.buffers) - 1
                    else:
                        out.buffers[tensor.buffer] = flipped
                        flipped_at[tensor.buffer] = tensor.buffer
                t2.buffer = flipped_at[tensor.buffer]
            sg2.tensors[t] = t2
        sg2.operators = [_marked_resize(model, op) if _presented_resize(model, op, s, chosen) else op
                         for op in sg.operators]
        out.subgraphs.append(sg2)
    _requantize_concat_inputs(out, chosen)
    return out, frozenset(chosen)


def _presented_resize(model: Model, op, s: int, chosen) -> bool:
    return model.op_name(op) == "RESIZE_BILINEAR" and bool(op.inputs) and (s, op.inputs[0]) in chosen


def _marked_resize(model: Model, op):
    """A copy of a presented RESIZE_BILINEAR whose options say it came from uint8 (FROM_UINT8)."""
    op = copy.copy(op)
    op.options = {**(op.options or {}), "new_height": FROM_UINT8}
    op.options_type = "ResizeBilinearOptions"
    return op


def _quant_key(tensor) -> tuple[float, int]:
    q = tensor.quantization
    return float(np.asarray(q.scale).reshape(-1)[0]), int(np.asarray(q.zero_point).reshape(-1)[0])


def _requantize_concat_inputs(model: Model, chosen: set) -> None:
    """LiteRT's uint8 CONCATENATION requantizes an input quantized unlike the output (ConcatenationWithScaling);
    its int8 kernel (and ours, as TFLM's) takes equal quantization only. So a QUANTIZE (int8 -> int8 requantize)
    is inserted before the concatenation for each such presented input, into a new tensor at the output's
    quantization: the concatenation then joins equal quantizations, as the int8 kernels do."""
    from edge_sdk.model.schema import BUILTIN_OPERATOR_CODES
    from edge_sdk.model.types import Operator, OperatorCode

    quantize = None
    for s, sg in enumerate(model.subgraphs):
        ops = []
        for op in sg.operators:
            if model.op_name(op) == "CONCATENATION" and op.outputs and (s, op.outputs[0]) in chosen:
                out_key = _quant_key(sg.tensors[op.outputs[0]])
                for k, t in enumerate(op.inputs):
                    if t < 0 or (s, t) not in chosen or _quant_key(sg.tensors[t]) == out_key:
                        continue
                    if quantize is None:
                        code = BUILTIN_OPERATOR_CODES["QUANTIZE"]
                        found = [i for i, c in enumerate(model.operator_codes)
                                 if c.builtin_code == code and c.custom_code is None]
                        if found:
                            quantize = found[0]
                        else:
                            model.operator_codes = [*model.operator_codes, OperatorCode(code, None, 1)]
                            quantize = len(model.operator_codes) - 1
                    src = sg.tensors[t]
                    requantized = copy.copy(src)
                    requantized.name = f"{src.name}/uint8_requantized"
                    requantized.buffer = 0
                    requantized.quantization = sg.tensors[op.outputs[0]].quantization
                    sg.tensors.append(requantized)
                    ops.append(Operator(quantize, [t], [len(sg.tensors) - 1]))
                    op = copy.copy(op)
                    op.inputs = [*op.inputs[:k], len(sg.tensors) - 1, *op.inputs[k + 1:]]
            ops.append(op)
        sg.operators = ops


# ------------------------------------------------------------------------------ the C runtime's bytes
# The C runtime (firmware_c) has no UINT8 presentation of its own: it refuses a quantized UINT8 tensor where its
# kernel runs INT8 (EDGE_UNSUPPORTED_TYPE naming the node). Every path that hands it a model - the C binding
# (c_interpreter), edge check's C runner, edge flash's firmware, edge profile's board, edge export's folder - hands
# it the presented bytes (edge_sdk.runtime.c_loaded), and flips the presented inputs / outputs at its boundary
# (``c_io``).
def c_io(model: Model, chosen) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(input positions, output positions) of subgraph 0 the C runtime holds as INT8 where the model says UINT8:
    the values to flip (``to_int8`` going in, ``to_uint8`` coming out) at its boundary."""
    sg = model.subgraphs[0] if model.subgraphs else None
    if sg is None or not chosen:
        return (), ()
    return (tuple(k for k, t in enumerate(sg.inputs) if (0, t) in chosen),
            tuple(k for k, t in enumerate(sg.outputs) if (0, t) in chosen))


def c_io_note(model: Model, chosen) -> str:
    """What a user's own code must know when it talks to the C runtime directly ("" when nothing is presented):
    the model's UINT8 inputs / outputs are held as INT8 (int8 = uint8 ^ 0x80, zero point - 128)."""
    if not chosen:
        return ""
    sg = model.subgraphs[0]
    ins, outs = c_io(model, chosen)
    named = [f"input {k} '{sg.tensors[sg.inputs[k]].name}'" for k in ins] + \
            [f"output {k} '{sg.tensors[sg.outputs[k]].name}'" for k in outs]
    where = (f"; its UINT8 {', '.join(named)} {'is' if len(named) == 1 else 'are'} INT8 there: "
             "int8 = uint8 ^ 0x80 (flip the sign bit going in and coming out)") if named else ""
    return (f"legacy UINT8 model: the C runtime runs it as INT8 with zero points - 128 "
            f"({len(chosen)} tensor(s) presented){where}")


def to_int8(value: np.ndarray) -> np.ndarray:
    """A uint8 array as the int8 values the kernels hold (q - 128)."""
    return (np.asarray(value, np.uint8) ^ np.uint8(SHIFT)).view(np.int8)


def to_uint8(value: np.ndarray) -> np.ndarray:
    """The int8 values the kernels hold as the model's uint8 values (q + 128)."""
    return (np.asarray(value).view(np.uint8) ^ np.uint8(SHIFT))


def details(d: dict) -> dict:
    """Tensor details of a presented tensor as the model declares it: UINT8, zero points + 128."""
    d["dtype"] = np.uint8
    scale, zp = d["quantization"]
    d["quantization"] = (scale, zp + SHIFT)
    qp = d["quantization_parameters"]
    qp["zero_points"] = np.asarray(qp["zero_points"], np.int32) + SHIFT
    return d
