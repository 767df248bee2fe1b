"""Streaming state kept on the device: state input / output pairs become resource variables (``--stateful``).

A streaming recurrent model (LSTM / GRU / RNN whose initial state is a graph input and whose final state is a
graph output, ``converters.import_onnx``'s ``import_notes["state_pairs"]``) makes its caller carry the state:
feed each output state back as the next chunk's input. ``make_stateful`` moves that loop into the model, as
streaming wake-word models do, so that a device keeps the state between invokes:

    main subgraph:  CALL_ONCE(init)                          # first invoke only: every state variable = 0
                    VAR_HANDLE("h") -> handle                # one per pair, named after the state input
                    READ_VARIABLE(handle) -> h               # the tensor that was the input 'h'
                    ... the model ...  -> yh                 # the tensor that was the output 'yh'
                    ASSIGN_VARIABLE(handle, yh)              # after every other op
    init subgraph:  VAR_HANDLE("h") -> handle; ASSIGN_VARIABLE(handle, zeros)

The pair leaves the signature (the model keeps only its other inputs and outputs). Quantized models keep the
variable integer: with float I/O the variable holds the int8 / int16 tensor the input's QUANTIZE gave (that
QUANTIZE and the output's DEQUANTIZE go), and when the state output's scale / zero point differ from the state
input's, a QUANTIZE requantizes it before ASSIGN_VARIABLE, so the variable is read and assigned at one scale.
The zeros of the init subgraph are the variable's zero point (real 0).

Calibration (``streamed_calibration``): int8 / int16x8 of a model with state pairs calibrates on the samples as one
stream, each state input the float model's state output of the chunk before, so the ranges cover the states the
model meets when streaming (zeros, or independent random states, would not).

Reset (``RESET_NOTE``): edge-sdk's ``Interpreter.reset_all_variables()`` (Python and C runtime) and TFLM's
``reset()`` forget the variables, which then read as their zero point -- real 0, the state a sequence starts
from (CALL_ONCE does not run again; it does not need to). LiteRT's ``reset_all_variables()`` resets only variable
tensors, not resource variables (measured with ai-edge-litert 2.3: the state carries on, and so it does across
``allocate_tensors()``): with LiteRT a new ``Interpreter`` starts a new sequence. tests/test_convert_stateful.py
checks both.
"""

from __future__ import annotations

import numpy as np

from converters import graph as G
from edge_sdk.errors import ConversionError
from edge_sdk.model.types import Model, Quantization, SubGraph, Tensor, numpy_dtype

RESET_NOTE = ("the state variables start at zero (a CALL_ONCE init subgraph); between sequences "
              "reset_all_variables() of edge-sdk's interpreter / C runtime (TFLM: reset()) sets them back to zero; "
              "LiteRT's reset_all_variables() leaves resource variables as they are: use a new LiteRT Interpreter")


def state_tensors(model: Model, pairs: list[dict]) -> list[dict]:
    """The state pairs as the convert report lists them: input and output name, shape, type (and quantization)."""
    sg = model.subgraphs[0]
    by_name = {sg.tensors[t].name: t for t in list(sg.inputs) + list(sg.outputs)}
    out = []
    for p in pairs:
        t = by_name.get(p["input"])
        entry = {"input": p["input"], "output": p["output"], "states": list(p.get("states", []))}
        if t is not None:
            entry.update(_describe(sg.tensors[t]))
        out.append(entry)
    return out


def _describe(tensor: Tensor) -> dict:
    d = {"shape": list(tensor.shape), "type": tensor.type}
    q = tensor.quantization
    if q is not None and q.scale is not None and np.size(q.scale) == 1:
        d["scale"] = float(np.asarray(q.scale).reshape(-1)[0])
        d["zero_point"] = int(np.asarray(q.zero_point).reshape(-1)[0])
    return d


def _quant_key(tensor: Tensor):
    q = tensor.quantization
    if q is None or q.scale is None or np.size(q.scale) == 0:
        return None
    return (tuple(np.asarray(q.scale, np.float32).reshape(-1)), tuple(np.asarray(q.zero_point).reshape(-1)))


def _copy_quant(q: Quantization | None) -> Quantization | None:
    if q is None:
        return None
    return Quantization(scale=np.array(q.scale), zero_point=np.array(q.zero_point),
                        quantized_dimension=q.quantized_dimension)


def make_stateful(model: Model, pairs: list[dict], where: str = "model") -> list[dict]:
    """Turn each state pair (``{"input": name, "output": name}``) of ``model``'s main subgraph into a resource
    variable, in place (see the module docstring). Returns the state variables for the report: name, the input /
    output they replace, shape, type and quantization. Raises ConversionError naming a pair that cannot be kept so
    (not in the signature, different shapes or types)."""
    if not pairs:
        raise ConversionError(f"{where}: --stateful: no state input / output pair to keep on the device (a "
                              "recurrent op's initial state as a graph input and its final state as a graph output "
                              "of the same shape and type)")
    sg = model.subgraphs[0]
    names = {sg.tensors[t].name: t for t in sg.inputs}
    out_names = _output_names(model)
    problems = []
    for p in pairs:
        if p["input"] not in names:
            problems.append(f"state input '{p['input']}' is not an input of the converted model")
        if p["output"] not in out_names:
            problems.append(f"state output '{p['output']}' is not an output of the converted model")
    if problems:
        raise ConversionError(f"{where}: --stateful: the state pairs do not fit the model", problems)

    init_index = len(model.subgraphs)
    init = SubGraph(tensors=[], inputs=[], outputs=[], operators=[], name="init_state")
    model.subgraphs.append(init)
    reads, assigns, variables = [], [], []
    drop_ops: set[int] = set()
    for p in pairs:
        var_t, src = _endpoints(model, names[p["input"]], out_names[p["output"]], drop_ops)
        var, value = sg.tensors[var_t], sg.tensors[src]
        if var.type != value.type or int(np.prod(var.shape)) != int(np.prod(value.shape)):
            raise ConversionError(f"{where}: --stateful: state '{p['input']}' is {var.type} {list(var.shape)} but "
                                  f"'{p['output']}' is {value.type} {list(value.shape)} (one variable holds both)")
        handle = G.add_tensor(model, f"{p['input']}/handle", (), "RESOURCE")
        reads.append(("VAR_HANDLE", [], [handle], {"container": "", "shared_name": p["input"]}))
        reads.append(("READ_VARIABLE", [handle], [var_t], {}))
        if _quant_key(var) != _quant_key(value) or tuple(var.shape) != tuple(value.shape):
            # one scale (and one shape) for the variable: the input's; the output is requantized / reshaped to it
            same = G.add_tensor(model, f"{p['output']}/as_state", var.shape, var.type,
                                quantization=_copy_quant(var.quantization))
            if _quant_key(var) != _quant_key(value):
                if tuple(var.shape) != tuple(value.shape):
                    raise ConversionError(f"{where}: --stateful: state '{p['input']}' {list(var.shape)} and "
                                          f"'{p['output']}' {list(value.shape)} differ in shape and scale")
                assigns.append(("QUANTIZE", [src], [same], {}))
            else:
                shape = G.add_constant(model, f"{p['output']}/state_shape", np.array(var.shape, np.int32))
                assigns.append(("RESHAPE", [src, shape], [same], {"new_shape": list(var.shape)}))
            src = same
        assigns.append(("ASSIGN_VARIABLE", [handle, src], [], {}))
        variables.append({"variable": p["input"], "input": p["input"], "output": p["output"],
                          "states": list(p.get("states", [])), **_describe(var)})
        _init_assign(model, init, p["input"], var)
    G.remove_ops(model, drop_ops)
    for op, ins, outs, opts in reversed(reads):
        G.add_op(model, op, ins, outs, opts, position=0)
    G.add_op(model, "CALL_ONCE", [], [], {"init_subgraph_index": init_index}, position=0)
    for op, ins, outs, opts in assigns:
        G.add_op(model, op, ins, outs, opts)
    gone_in = {names[p["input"]] for p in pairs}
    gone_out = {out_names[p["output"]] for p in pairs}
    sg.inputs = [t for t in sg.inputs if t not in gone_in]
    sg.outputs = [t for t in sg.outputs if t not in gone_out]
    for sd in model.signature_defs:
        if sd.subgraph_index == 0:
            sd.inputs = {k: t for k, t in sd.inputs.items() if t not in gone_in}
            sd.outputs = {k: t for k, t in sd.outputs.items() if t not in gone_out}
    G.check_topological(model, 0)
    G.eliminate_dead_code(model)
    return variables


def _output_names(model: Model) -> dict[str, int]:
    """The main subgraph's outputs by name, each also by the name of the tensor a DEQUANTIZE writing it reads
    (with float I/O the quantizer's output 'yh_dequant' stands for the model's 'yh')."""
    sg = model.subgraphs[0]
    prod = G.producers(model)
    out = {}
    for t in sg.outputs:
        if t in prod and model.op_name(sg.operators[prod[t]]) == "DEQUANTIZE":
            out.setdefault(sg.tensors[sg.operators[prod[t]].inputs[0]].name, t)
    out.update({sg.tensors[t].name: t for t in sg.outputs})
    return out


def _endpoints(model: Model, t_in: int, t_out: int, drop_ops: set[int]) -> tuple[int, int]:
    """(the tensor READ_VARIABLE writes, the tensor ASSIGN_VARIABLE reads) for a state input / output. A float
    input whose only reader is a QUANTIZE (a quantized model with float I/O) is skipped: the variable holds the
    integer tensor, and the QUANTIZE goes; likewise a float output a DEQUANTIZE of an integer tensor writes."""
    sg = model.subgraphs[0]
    cons, prod = G.consumers(model), G.producers(model)
    var_t, src = t_in, t_out
    users = cons.get(t_in, [])
    if sg.tensors[t_in].type == "FLOAT32" and len(users) == 1 and t_in not in sg.outputs:
        q = sg.operators[users[0]]
        if model.op_name(q) == "QUANTIZE" and _quant_key(sg.tensors[q.outputs[0]]) is not None:
            var_t = q.outputs[0]
            drop_ops.add(users[0])
    if var_t != t_in and sg.tensors[t_out].type == "FLOAT32" and t_out in prod:
        d = sg.operators[prod[t_out]]
        if model.op_name(d) == "DEQUANTIZE" and _quant_key(sg.tensors[d.inputs[0]]) is not None:
            src = d.inputs[0]
            if not cons.get(t_out):
                drop_ops.add(prod[t_out])
    return var_t, src


def _init_assign(model: Model, init: SubGraph, name: str, var: Tensor) -> None:
    """The init subgraph's VAR_HANDLE + ASSIGN_VARIABLE of zeros (the zero point: real 0) for one variable."""
    index = len(model.subgraphs) - 1
    zero = 0
    if _quant_key(var) is not None:
        zero = int(np.asarray(var.quantization.zero_point).reshape(-1)[0])
    value = np.full(var.shape, zero, numpy_dtype(var.type))
    handle = len(init.tensors)
    init.tensors.append(Tensor(name=f"{name}/handle", shape=(), type="RESOURCE"))
    const = G.add_constant(model, f"{name}/zero", value, type=var.type, sg=index,
                           quantization=_copy_quant(var.quantization))
    G.add_op(model, "VAR_HANDLE", [], [handle], {"container": "", "shared_name": name}, sg=index)
    G.add_op(model, "ASSIGN_VARIABLE", [handle, const], [], {}, sg=index)


def streamed_calibration(model: Model, source, pairs: list[dict], preprocess=None, where: str = "model"):
    """Calibration samples for a streaming model whose state pairs (``pairs``) the caller carries: the samples are
    taken as consecutive chunks of one stream, and each state input is the float model's state output of the chunk
    before (zeros for the first), so calibration and the accuracy guard see the states the model meets when it
    streams -- not the zeros (or whatever) the samples hold. The samples may give every input, or only the inputs
    that are not state (audio chunks alone). Returns (samples: a list, one per chunk, every input in order; a note
    for the report). Raises ConversionError when the samples fit neither."""
    from converters.calibration import calibration_data
    from edge_sdk.errors import ModelError
    from edge_sdk.runtime.interpreter import Interpreter

    sg = model.subgraphs[0]
    names = [sg.tensors[t].name for t in sg.inputs]
    specs = [(tuple(sg.tensors[t].shape), np.dtype(sg.tensors[t].dtype), sg.tensors[t].name) for t in sg.inputs]
    state_in = {p["input"]: p["output"] for p in pairs}
    free = [s for s in specs if s[2] not in state_in]
    samples, given = None, None
    problems = []
    for with_state, wanted in ((True, specs), (False, free)):  # every input given, else the state ones filled in
        try:
            samples = list(calibration_data(source, inputs=wanted, preprocess=preprocess, label="calibrating"))
            given = with_state
            break
        except ModelError as exc:
            problems.append(str(exc).splitlines()[0])
    if samples is None:
        raise ConversionError(f"{where}: the calibration samples fit neither every input nor the inputs besides the "
                              f"state ({', '.join(state_in)})", problems)
    interp = Interpreter(model=model)
    interp.allocate_tensors()
    ins = {d["name"]: d["index"] for d in interp.get_input_details()}
    outs = {d["name"]: d["index"] for d in interp.get_output_details()}
    missing = [o for o in state_in.values() if o not in outs] + [i for i in state_in if i not in ins]
    if missing:
        raise ConversionError(f"{where}: streamed calibration: state tensor(s) {', '.join(missing)} are not inputs / "
                              "outputs of the model")
    carried = {n: np.zeros(s, d) for s, d, n in specs if n in state_in}
    stream = []
    for sample in samples:
        values = dict(zip([s[2] for s in (specs if given else free)], sample))
        values.update(carried)
        full = [np.asarray(values[n]) for n in names]
        for n, x in zip(names, full):
            interp.set_tensor(ins[n], x)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            interp.invoke()
        for n, out in state_in.items():
            carried[n] = np.array(interp.get_tensor(outs[out])).reshape(carried[n].shape).astype(carried[n].dtype)
        stream.append(full)
    note = (f"calibration streamed: {len(stream)} sample(s) as consecutive chunks, each state input "
            f"({', '.join(state_in)}) the float model's state output of the chunk before (zeros first)"
            + ("; the samples' own state values replaced" if given else "; the samples gave no state"))
    return stream, note


__all__ = ["RESET_NOTE", "make_stateful", "state_tensors", "streamed_calibration"]
